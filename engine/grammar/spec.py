"""What a request asks its output to match, checked before anything compiles it.

A `GrammarSpec` is the engine-side form of OpenAI's `response_format`
(`json_schema`, `json_object`) and SGLang's `regex` / `ebnf` extension fields.
`validate` is the boundary check (DESIGN: user input validated once, into typed
errors): sizes first, so a 1 MB schema is turned away before it is parsed, then
JSON parsing and the schema checks of `schema_check`. Compilation (with its own
timeout) happens later, in `GrammarBackend`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from engine.errors import InvalidRequestError
from engine.grammar.schema_check import LOOKAROUNDS, check_json_schema


def _refuse_constant(name: str) -> None:
    # Python's json accepts NaN and Infinity; JSON (and xgrammar) do not.
    raise ValueError(f"{name} is not valid JSON")


class GrammarError(InvalidRequestError):
    """A schema, regex or grammar is malformed, too large, unsupported, or took
    too long to compile. The message says which and why; the server answers 400."""


@dataclass(frozen=True)
class GrammarLimits:
    """Caps on grammar sources, checked before parsing or compiling."""

    max_schema_bytes: int = 64 << 10    # JSON text of a schema (UTF-8 bytes)
    max_regex_bytes: int = 4 << 10
    max_ebnf_bytes: int = 64 << 10
    max_schema_depth: int = 32          # nested subschemas (objects in arrays in ...)


DEFAULT_GRAMMAR_LIMITS = GrammarLimits()

# Which request parameter each kind comes from, for error messages and OpenAI's `param`.
_PARAM_BY_KIND = {
    "json_schema": "response_format",
    "json_object": "response_format",
    "regex": "regex",
    "ebnf": "ebnf",
}


@dataclass(frozen=True)
class GrammarSpec:
    """Exactly one of the fields is set. EBNF is GBNF-style text whose start
    rule is named `root`; a regex must match the whole output."""

    json_schema: str | None = None      # JSON text of a schema
    json_object: bool = False           # any JSON object
    regex: str | None = None
    ebnf: str | None = None

    @property
    def kind(self) -> str:
        kinds = self._set_kinds()
        assert len(kinds) == 1, f"GrammarSpec needs exactly one source, has {kinds}; call validate() first"
        return kinds[0]

    @property
    def source(self) -> str:
        """The text the compiler reads for `kind` ("" for json_object)."""
        kind = self.kind
        return "" if kind == "json_object" else getattr(self, kind)

    @property
    def param(self) -> str:
        return _PARAM_BY_KIND[self.kind]

    @property
    def key(self) -> tuple[str, str]:
        """Cache key: equal keys compile to the same grammar."""
        return (self.kind, self.source)

    def has_one_source(self) -> bool:
        """Cheap shape check: exactly one kind set, as a string where one is needed."""
        kinds = self._set_kinds()
        return len(kinds) == 1 and (kinds[0] == "json_object" or isinstance(getattr(self, kinds[0]), str))

    def validate(self, limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS) -> None:
        """Raise GrammarError unless this spec may be compiled."""
        kinds = self._set_kinds()
        if len(kinds) != 1:
            named = ", ".join(kinds) if kinds else "none"
            raise GrammarError(
                f"give exactly one of json_schema, json_object, regex or ebnf (got: {named})",
                param="response_format")
        kind = kinds[0]
        if kind == "json_object":
            return
        text = getattr(self, kind)
        if not isinstance(text, str):
            raise GrammarError(f"{kind} must be a string, got {type(text).__name__}", param=self.param)
        limit = {"json_schema": limits.max_schema_bytes, "regex": limits.max_regex_bytes,
                 "ebnf": limits.max_ebnf_bytes}[kind]
        # len(str) <= len(utf-8 bytes): a text with too many characters is refused without encoding it.
        num_bytes = len(text) if len(text) > limit else len(text.encode("utf-8"))
        if num_bytes > limit:
            raise GrammarError(
                f"the {kind} has at least {num_bytes} bytes, more than the limit of {limit} bytes",
                param=self.param)
        if not text.strip():
            raise GrammarError(f"the {kind} is empty", param=self.param)
        if kind == "json_schema":
            self._validate_schema(text, limits)
        if kind == "regex" and any(look in text for look in LOOKAROUNDS):
            raise GrammarError("lookaround ((?=, (?!, (?<=, (?<!) is not supported in regex", param=self.param)

    def _validate_schema(self, text: str, limits: GrammarLimits) -> None:
        try:
            schema = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError:
            raise GrammarError("json_schema is nested too deeply to parse", param=self.param) from None
        except ValueError as exc:
            raise GrammarError(f"json_schema is not valid JSON: {exc}", param=self.param) from None
        problem = check_json_schema(schema, max_depth=limits.max_schema_depth)
        if problem is not None:
            raise GrammarError(f"json_schema: {problem}", param=self.param)

    def _set_kinds(self) -> list[str]:
        kinds = [name for name in ("json_schema", "regex", "ebnf") if getattr(self, name) is not None]
        if self.json_object:
            kinds.insert(1, "json_object")
        return kinds

    def describe(self) -> str:
        """Short label for logs and messages (never the full source)."""
        kind = self.kind
        return kind if kind == "json_object" else f"{kind} ({len(self.source)} chars)"
