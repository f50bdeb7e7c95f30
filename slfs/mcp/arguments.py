"""Tool arguments checked strictly against the input schema each tool declares, before it runs.

The SDK validates arguments with pydantic in lax mode, which converts what it can: `"on": "yes"`
became True (and started a script), `"tail_s": "0"` a number, `"recursive": 1` a flag. Here each
call's arguments are validated with jsonschema against the very schema `tools/list` advertises
(in which a boolean is not a number and a string is not a boolean), and unknown argument names are
refused (the advertised schemas say `additionalProperties: false`), so a misspelt argument is not
silently ignored. A refusal names the argument and what it must be, never the value given (that is
the caller's data, possibly large)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

# JSON Schema's type names in words.
_TYPES = {"string": "a string", "boolean": "true or false", "integer": "an integer", "number": "a number",
          "object": "a JSON object", "array": "an array", "null": "null"}
_BOUNDS = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "greater than",
           "exclusiveMaximum": "less than"}


def closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a tool's arguments with unknown argument names refused."""
    return {**schema, "additionalProperties": False}


def json_type(value: Any) -> str:
    """The JSON type of a decoded value, as a schema names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _expected(schema: Any) -> str:
    """What a (sub)schema wants, in words: its type, or the types of its alternatives."""
    if not isinstance(schema, Mapping):
        return "a valid value"
    kind = schema.get("type")
    if isinstance(kind, str):
        return _TYPES.get(kind, kind)
    alternatives = schema.get("anyOf") or schema.get("oneOf") or []
    return " or ".join(_expected(s) for s in alternatives) or "a valid value"


def _problem(err: ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    if err.validator == "required" and isinstance(err.validator_value, list):
        missing = [n for n in err.validator_value if isinstance(err.instance, dict) and n not in err.instance]
        return "missing argument " + ", ".join(f"'{n}'" for n in missing)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = set(err.schema.get("properties", {}))
        unknown = sorted(str(k) for k in err.instance if k not in known)
        allowed = ", ".join(sorted(known)) or "none"
        return "unknown argument " + ", ".join(f"'{n}'" for n in unknown) + f" (it takes: {allowed})"
    if err.validator in ("type", "anyOf", "oneOf"):
        return f"argument '{where}' must be {_expected(err.schema)}, not {json_type(err.instance)}"
    if err.validator in _BOUNDS:
        return f"argument '{where}' must be {_BOUNDS[str(err.validator)]} {err.validator_value}"
    return f"argument '{where}' does not match the tool's schema ({err.validator})"


def problems(schema: Mapping[str, Any], arguments: Any) -> list[str]:
    """What is wrong with `arguments` for a tool declaring `schema`, one line each (none: valid)."""
    errors = Draft202012Validator(schema).iter_errors(arguments)
    return [_problem(e) for e in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])]
