"""A JSON schema that a job's extracted fields must match: checked once, when
the job is submitted (API upload or `ocrserve run --schema`), before any work.

| refused (`SchemaError`, an `InputError`: the API answers 400) | why                                   |
|----------------------------------------------------------------|---------------------------------------|
| more than `max_bytes` of JSON text                             | a cap checked before parsing          |
| text that is not JSON, or JSON that is not an object schema    | extraction fills in one JSON object   |
| not a valid JSON Schema (draft 2020-12 unless `$schema` says)  | `jsonschema`'s own meta-schema check  |
| `$ref` that is not local (`#/...`) or does not resolve         | nothing is ever fetched (DESIGN)      |
| nesting deeper than `MAX_SCHEMA_DEPTH`                         | bounded work for the grammar compiler |

What the extraction endpoint can compile is its own business: our engine also
refuses keywords its grammar compiler would ignore (a 400 that the job then
records as a failed extraction, with the engine's message).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import jsonschema

from vision.limits import InputError

MAX_SCHEMA_DEPTH = 32
INLINE_NAME = "inline"
_CHILD_SCHEMA_KEYS = ("items", "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else",
                      "unevaluatedItems", "unevaluatedProperties")
_CHILD_MAP_KEYS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_CHILD_LIST_KEYS = ("anyOf", "oneOf", "allOf", "prefixItems")


class SchemaError(InputError):
    code = "invalid_schema"


@dataclass(frozen=True)
class ExtractionSchema:
    name: str                  # a registered name, or "inline"
    schema: dict[str, Any]

    @property
    def text(self) -> str:
        """Compact JSON in the schema's own key order (a grammar emits properties in that order)."""
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "schema": self.schema}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExtractionSchema:
        return cls(data["name"], data["schema"])


def parse_schema(text: str | bytes, max_bytes: int, name: str = INLINE_NAME) -> ExtractionSchema:
    """JSON text -> a checked `ExtractionSchema`; `SchemaError` says what is wrong."""
    what = "the schema" if name == INLINE_NAME else f"schema {name!r}"
    # A str has no more characters than UTF-8 bytes: one too long in characters is refused unencoded.
    too_big = len(text) > max_bytes or (isinstance(text, str) and len(text.encode()) > max_bytes)
    if too_big:
        raise SchemaError(f"{what} is larger than the {max_bytes:,}-byte limit")
    try:
        schema = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(f"{what} is not valid JSON: {exc}") from None
    check_schema(schema, what)
    return ExtractionSchema(name, schema)


def check_schema(schema: Any, what: str = "the schema") -> None:
    if not isinstance(schema, dict):
        raise SchemaError(f"{what} must be a JSON object, got {type(schema).__name__}")
    if schema.get("type") != "object":
        raise SchemaError(f"{what} must describe a JSON object: its top level needs \"type\": \"object\"")
    _check_depth_and_refs(schema, schema, [], 0, what)
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"{what} is not a valid JSON Schema at {_pointer(list(exc.absolute_path))}: "
                          f"{exc.message}") from None


def validation_error(data: Any, schema: dict[str, Any]) -> str | None:
    """Why `data` does not match `schema` (a sentence), or None when it does."""
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(data))
    return None if error is None else f"at {_pointer(list(error.absolute_path))}: {error.message[:300]}"


def _check_depth_and_refs(node: Any, root: dict[str, Any], path: list[str], depth: int, what: str) -> None:
    # Our own walk: jsonschema's meta-schema check looks at the shape of a $ref, not where it points,
    # and follows nesting as deep as it goes.
    if not isinstance(node, dict):
        return
    if depth > MAX_SCHEMA_DEPTH:
        raise SchemaError(f"{what} nests deeper than {MAX_SCHEMA_DEPTH} levels at {_pointer(path)}")
    ref = node.get("$ref")
    if ref is not None:
        _check_ref(ref, root, path, what)
    for key in ("$schema", "$id"):
        if key in node and path:
            raise SchemaError(f"{what} has {key} below its top level (at {_pointer(path)}); embedded "
                              "schemas are not supported")
    for key in _CHILD_SCHEMA_KEYS:
        _check_depth_and_refs(node.get(key), root, path + [key], depth + 1, what)
    for key in _CHILD_MAP_KEYS:
        children = node.get(key)
        if isinstance(children, dict):
            for name, child in children.items():
                _check_depth_and_refs(child, root, path + [key, str(name)], depth + 1, what)
    for key in _CHILD_LIST_KEYS:
        children = node.get(key)
        if isinstance(children, list):
            for index, child in enumerate(children):
                _check_depth_and_refs(child, root, path + [key, str(index)], depth + 1, what)


def _check_ref(ref: Any, root: dict[str, Any], path: list[str], what: str) -> None:
    where = _pointer(path)
    if not isinstance(ref, str):
        raise SchemaError(f"{what}: $ref at {where} must be a string")
    if not ref.startswith("#"):
        raise SchemaError(f"{what}: $ref {ref[:80]!r} at {where} points outside the schema; only local references "
                          "like '#/$defs/name' are allowed (nothing is fetched)")
    target: Any = root
    for part in ref[2:].split("/") if ref not in ("#", "#/") else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        else:
            raise SchemaError(f"{what}: $ref {ref[:80]!r} at {where} does not resolve inside the schema")
    if not isinstance(target, (dict, bool)):
        raise SchemaError(f"{what}: $ref {ref[:80]!r} at {where} does not point at a schema")


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _pointer(path: list[Any]) -> str:
    return "#/" + "/".join(str(part) for part in path) if path else "the top level"
