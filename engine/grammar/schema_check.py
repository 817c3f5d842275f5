"""Checks a parsed JSON schema before xgrammar compiles it.

Constrained output promises that every answer validates against the schema.
xgrammar enforces most of JSON Schema but silently ignores a few keywords
(measured with xgrammar 0.2.9: an output breaking them is accepted), so a
schema that uses them is refused here with a message naming the keyword and
where it is, instead of producing output that does not validate:

| refused                                   | why                                        |
|-------------------------------------------|--------------------------------------------|
| not, if/then/else, dependentRequired,     | ignored by the compiler                    |
| dependentSchemas, dependencies,           |                                            |
| $dynamicRef, $recursiveRef                |                                            |
| uniqueItems: true                         | ignored                                    |
| allOf with more than one subschema        | only one branch is enforced                |
| multipleOf that is not an integer         | ignored for fractions                      |
| pattern together with minLength/maxLength | the lengths are ignored beside a pattern   |
| lookaround in a pattern: (?= (?! (?<= (?<!| compiled as if absent                      |
| $ref beside validation keywords           | the siblings are ignored                   |
| required name missing from properties     | strict mode forbids it: no valid output    |
| $ref that is remote or does not resolve   | nothing is ever fetched (DESIGN: security) |

`oneOf` is compiled like `anyOf`; with overlapping branches an output can match
two of them. Schemas whose branches overlap are rare and left to the caller.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import jsonschema

_UNSUPPORTED_KEYWORDS = ("not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                         "dependencies", "$dynamicRef", "$recursiveRef")
# Keywords that may sit beside $ref because they do not constrain the value.
_ANNOTATION_KEYWORDS = {"$ref", "title", "description", "default", "examples", "$comment",
                        "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
                        "$schema", "$id", "$anchor"}
# xgrammar compiles a regex lookaround as if it were absent: refuse it, in schemas and in `regex`.
LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")

_SINGLE_SUBSCHEMA = ("items", "additionalProperties", "additionalItems", "contains",
                     "propertyNames", "unevaluatedProperties", "unevaluatedItems")
_MAP_OF_SUBSCHEMAS = ("properties", "patternProperties", "$defs", "definitions")
_LIST_OF_SUBSCHEMAS = ("anyOf", "oneOf", "allOf", "prefixItems")


class _SchemaProblem(Exception):
    pass


def check_json_schema(schema: Any, max_depth: int) -> str | None:
    """Return a message saying what is wrong with `schema`, or None if it may be compiled."""
    if not isinstance(schema, (dict, bool)):
        return f"a schema must be a JSON object (or true/false), got {type(schema).__name__}"
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = _pointer(list(exc.absolute_path))
        return f"not a valid JSON Schema at {where}: {exc.message}"
    try:
        _check_subschema(schema, schema, [], max_depth)
    except _SchemaProblem as exc:
        return str(exc)
    return None


def _check_subschema(node: Any, root: Any, path: list[str], depth_left: int) -> None:
    if isinstance(node, bool):
        return
    if not isinstance(node, dict):
        raise _SchemaProblem(f"at {_pointer(path)}: a subschema must be an object or a boolean")
    if depth_left <= 0:
        raise _SchemaProblem(f"at {_pointer(path)}: the schema nests deeper than the limit of "
                             f"{len(path)} levels")
    _check_keywords(node, root, path)
    for keyword in _SINGLE_SUBSCHEMA:
        if keyword in node and isinstance(node[keyword], (dict, bool)):
            _check_subschema(node[keyword], root, path + [keyword], depth_left - 1)
    for keyword in _MAP_OF_SUBSCHEMAS:
        for name, child in node.get(keyword, {}).items():
            _check_subschema(child, root, path + [keyword, name], depth_left - 1)
    for keyword in _LIST_OF_SUBSCHEMAS:
        for index, child in enumerate(node.get(keyword, [])):
            _check_subschema(child, root, path + [keyword, str(index)], depth_left - 1)


def _check_keywords(node: dict[str, Any], root: Any, path: list[str]) -> None:
    where = _pointer(path)
    for keyword in _UNSUPPORTED_KEYWORDS:
        if keyword in node:
            raise _SchemaProblem(f"at {where}: '{keyword}' is not supported for constrained output")
    if node.get("uniqueItems") is True:
        raise _SchemaProblem(f"at {where}: 'uniqueItems' is not supported for constrained output")
    if len(node.get("allOf", [])) > 1:
        raise _SchemaProblem(f"at {where}: 'allOf' with more than one subschema is not supported; "
                             "merge them into one schema")
    multiple_of = node.get("multipleOf")
    if isinstance(multiple_of, float) and not multiple_of.is_integer():
        raise _SchemaProblem(f"at {where}: 'multipleOf' must be an integer for constrained output")
    pattern = node.get("pattern")
    if pattern is not None:
        if "minLength" in node or "maxLength" in node:
            raise _SchemaProblem(
                f"at {where}: 'pattern' together with 'minLength'/'maxLength' is not supported; "
                "bound the length inside the pattern instead, e.g. ^[A-Z]{1,10}$")
        if any(look in pattern for look in LOOKAROUNDS):
            raise _SchemaProblem(f"at {where}: lookaround in 'pattern' is not supported")
    if "$ref" in node:
        _check_ref(node, root, where)
    required = node.get("required", [])
    additional = node.get("additionalProperties", False)
    if required and additional is False and "patternProperties" not in node:
        properties = node.get("properties", {})
        missing = [name for name in required if name not in properties]
        if missing:
            raise _SchemaProblem(f"at {where}: 'required' names {missing[0]!r}, which is not in "
                                 "'properties', so no output could be valid")


def _check_ref(node: dict[str, Any], root: Any, where: str) -> None:
    ref = node["$ref"]
    if not ref.startswith("#"):
        raise _SchemaProblem(f"at {where}: $ref {ref!r} points outside the schema; only local "
                             "references like '#/$defs/name' are allowed (nothing is fetched)")
    if ref != "#" and not ref.startswith("#/"):
        raise _SchemaProblem(f"at {where}: $ref {ref!r} is not a JSON pointer; use '#/$defs/name'")
    target = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            raise _SchemaProblem(f"at {where}: $ref {ref!r} does not resolve: no {part!r} in the schema")
    if not isinstance(target, (dict, bool)):
        raise _SchemaProblem(f"at {where}: $ref {ref!r} points at something that is not a schema")
    siblings = sorted(set(node) - _ANNOTATION_KEYWORDS)
    if siblings:
        raise _SchemaProblem(f"at {where}: keywords beside $ref ({', '.join(siblings)}) are not "
                             "supported; move them into the referenced schema")


def _pointer(path: list[Any]) -> str:
    return "#/" + "/".join(str(part) for part in path) if path else "the schema root"
