"""Script texts that fail to compile, and the quickfix line a diagnostic prints as."""

from __future__ import annotations

import re

QF_LINE = re.compile(r"^(/.+):(\d+):(\d+): ([a-z]+): (.+)$")
BAD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("oops" @);\n    }\n}\n'
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("%s");\n    }\n}\n'
BAD_LUAU = "local function f()\n    print('x')\n"
