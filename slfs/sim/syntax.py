# ruff: noqa: E501
"""Small but plausible syntax definitions and syntax-cache files served by the simulated viewer."""

from __future__ import annotations

import json
from typing import Any

LSL_DEFS: dict[str, Any] = {
    "llsd-lsl-syntax-version": 2,
    "constants": {
        "PI": {
            "type": "float",
            "value": "3.14159265",
            "tooltip": "3.14159265 - The number of radians in a semi-circle.",
        },
        "TRUE": {"type": "integer", "value": "1", "tooltip": "An integer constant for boolean comparisons."},
        "FALSE": {"type": "integer", "value": "0", "tooltip": "An integer constant for boolean comparisons."},
        "DEBUG_CHANNEL": {
            "type": "integer",
            "value": "2147483647",
            "tooltip": "Chat channel reserved for script debugging.",
        },
    },
    "controls": {
        "default": {"tooltip": "All scripts must have a default state."},
        "state": {},
        "jump": {},
        "return": {},
    },
    "events": {
        "state_entry": {"arguments": [], "tooltip": "Triggered on any state transition and startup."},
        "touch_start": {
            "arguments": [{"num_detected": {"type": "integer"}}],
            "tooltip": "Triggered by the start of agent clicking on task.",
        },
        "timer": {"arguments": [], "tooltip": "Result of the llSetTimerEvent library function call."},
        "listen": {
            "arguments": [
                {"channel": {"type": "integer"}},
                {"name": {"type": "string"}},
                {"id": {"type": "key"}},
                {"message": {"type": "string"}},
            ]
        },
    },
    "functions": {
        "llOwnerSay": {
            "arguments": [{"msg": {"type": "string"}}],
            "energy": 10.0,
            "sleep": 0.0,
            "tooltip": "Says Text to owner only, if owner is in region.",
        },
        "llSay": {
            "arguments": [{"channel": {"type": "integer"}}, {"msg": {"type": "string"}}],
            "energy": 10.0,
        },
        "llSetTimerEvent": {"arguments": [{"sec": {"type": "float"}}], "energy": 10.0},
        "llGetOwner": {"arguments": [], "return": "key", "energy": 10.0},
        "llResetScript": {"arguments": [], "energy": 10.0},
    },
    "types": {"integer": {}, "float": {}, "string": {}, "key": {}, "vector": {}, "rotation": {}, "list": {}},
}

LUA_DEFS: dict[str, Any] = {
    "llsd-lsl-syntax-version": 2,
    "constants": {"PI": {"type": "number", "value": "3.14159265"}, "TRUE": {"type": "number", "value": "1"}},
    "functions": {
        "ll.OwnerSay": {"arguments": [{"msg": {"type": "string"}}], "tooltip": "Says Text to owner only."},
        "ll.Say": {"arguments": [{"channel": {"type": "number"}}, {"msg": {"type": "string"}}]},
        "ll.GetOwner": {"arguments": [], "return": "uuid"},
    },
    "events": {"touch_start": {"arguments": [{"num_detected": {"type": "number"}}]}},
    "types": {"uuid": {}, "vector": {}, "quaternion": {}},
}

DOCS_JSON: dict[str, Any] = {
    "@roblox/global/ll.OwnerSay": {
        "documentation": "Says Text to owner only, if owner is in region.",
        "params": [{"name": "msg", "documentation": "The text."}],
    },
    "@roblox/global/ll.Say": {"documentation": "Says Text on Channel.", "params": []},
}

CACHE_FILES: dict[str, str] = {
    "builtins.txt": "// LSL built-ins (simulated)\n"
    "integer TRUE = 1\ninteger FALSE = 0\nfloat PI = 3.14159265\n"
    "llOwnerSay( string msg )\nllSay( integer channel, string msg )\nllSetTimerEvent( float sec )\n"
    "key llGetOwner( )\nllResetScript( )\nevent state_entry( )\nevent touch_start( integer num_detected )\n",
    "lsl_definitions.yaml": "version: 1\nfunctions:\n  llOwnerSay:\n    arguments:\n      - msg: {type: string}\n"
    "  llSay:\n    arguments:\n      - channel: {type: integer}\n      - msg: {type: string}\n"
    "events:\n  state_entry: {arguments: []}\n",
    "secondlife.d.luau": "declare ll: {\n    OwnerSay: (msg: string) -> (),\n    Say: (channel: number, msg: string) -> (),\n"
    "    GetOwner: () -> uuid,\n}\n",
    "secondlife.docs.json": json.dumps(DOCS_JSON, indent=2, sort_keys=True) + "\n",
    "slua_definitions.yaml": "version: 1\nglobals:\n  ll:\n    OwnerSay: {args: [string]}\n    Say: {args: [number, string]}\n",
    "secondlife_selene.yml": "base: luau\nname: secondlife\nglobals:\n  ll.OwnerSay:\n    args:\n      - type: string\n",
}
