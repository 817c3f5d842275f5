"""The constraint a request puts on its output, turned into the engine's `GrammarSpec`.

| request field                                                  | GrammarSpec                  |
|----------------------------------------------------------------|------------------------------|
| absent, or `response_format: {"type": "text"}`                 | none (free text)             |
| `response_format: {"type": "json_object"}`                     | json_object: any JSON object |
| `response_format: {"type": "json_schema", "json_schema":       | json_schema: the schema as   |
|  {"name", "schema", "description"?, "strict"?}}`               | compact JSON text            |
| `regex` (SGLang extension): the whole output matches it        | regex                        |
| `ebnf` (SGLang extension): GBNF-style text, start rule `root`  | ebnf                         |

A request carries at most one constraint (400 otherwise). Only the shape of
`response_format` is checked here. The sources themselves -- size caps (the
engine's `GrammarLimits`), JSON Schema validity, local `$ref` only, regex and
EBNF syntax, the compile timeout -- are checked once, by the engine, when it
admits the request (off the event loop); a failure comes back as `GrammarError`
(400, its message and `param`) or, when the compiler stays busy with other
requests, `EngineOverloadedError` (503). Before all of it the body was read
under `max_request_bytes`, so an oversized body is a 413 and is never parsed.
"""
from __future__ import annotations

import json

from engine.grammar.spec import GrammarSpec
from engine.server.api_errors import ApiError
from engine.server.protocol import GenerationFields, ResponseFormat


def grammar_spec(body: GenerationFields) -> GrammarSpec | None:
    """The request's output constraint, or None when its output is free text."""
    specs: dict[str, GrammarSpec] = {}
    if body.response_format is not None:
        spec = response_format_spec(body.response_format)
        if spec is not None:
            specs["response_format"] = spec
    if body.regex is not None:
        specs["regex"] = GrammarSpec(regex=body.regex)
    if body.ebnf is not None:
        specs["ebnf"] = GrammarSpec(ebnf=body.ebnf)
    if len(specs) > 1:
        named = " and ".join(specs)
        raise ApiError(400, f"a request may constrain its output one way only; got {named}: send one of "
                            "response_format (json_schema or json_object), regex or ebnf",
                       "invalid_request", list(specs)[1])
    return next(iter(specs.values()), None)


def response_format_spec(response_format: ResponseFormat) -> GrammarSpec | None:
    kind = response_format.type
    if kind != "json_schema" and response_format.json_schema is not None:
        raise ApiError(400, f"response_format.json_schema is only allowed with type 'json_schema', "
                            f"not {kind!r}", "invalid_request", "response_format.json_schema")
    if kind == "text":
        return None
    if kind == "json_object":
        return GrammarSpec(json_object=True)
    if response_format.json_schema is None:
        raise ApiError(400, "response_format of type 'json_schema' needs a 'json_schema' object with "
                            "'name' and 'schema'", "missing_parameter", "response_format.json_schema")
    try:
        # Compact and in the client's key order: xgrammar emits properties in schema order, and
        # equal schemas give equal text, so they share one compiled grammar in the engine's cache.
        text = json.dumps(response_format.json_schema.schema_object, separators=(",", ":"), ensure_ascii=False)
    except (RecursionError, ValueError) as exc:
        raise ApiError(400, f"response_format.json_schema.schema cannot be read as JSON: {exc}",
                       "invalid_request", "response_format") from None
    return GrammarSpec(json_schema=text)
