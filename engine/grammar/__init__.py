"""Grammar-constrained decoding with xgrammar.

| module          | owns                                                              |
|-----------------|-------------------------------------------------------------------|
| spec            | GrammarSpec (what a request asks for), size limits, GrammarError |
| schema_check    | JSON-schema checks: local $ref only, keywords xgrammar enforces   |
| compile_worker  | the child process that compiles, so a compile can be timed out    |
| backend         | GrammarBackend: one per model; bounded LRU cache of compiled      |
|                 | grammars; makes per-request GrammarStates                         |
| state           | GrammarState (per request) and the per-step batch masks           |
"""
from engine.grammar.backend import GrammarBackend
from engine.grammar.spec import DEFAULT_GRAMMAR_LIMITS, GrammarError, GrammarLimits, GrammarSpec
from engine.grammar.state import GrammarState, apply_grammar, batch_allowed_mask, fill_batch_bitmask, unpack_bitmask

__all__ = [
    "DEFAULT_GRAMMAR_LIMITS",
    "GrammarBackend",
    "GrammarError",
    "GrammarLimits",
    "GrammarSpec",
    "GrammarState",
    "apply_grammar",
    "batch_allowed_mask",
    "fill_batch_bitmask",
    "unpack_bitmask",
]
