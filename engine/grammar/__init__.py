"""Grammar-constrained decoding with xgrammar.

| module          | owns                                                              |
|-----------------|-------------------------------------------------------------------|
| spec            | GrammarSpec (what a request asks for), size limits, GrammarError |
| schema_check    | JSON-schema checks: local $ref only, keywords xgrammar enforces   |
| compile_worker  | the child process that compiles, so a compile can be timed out    |
| backend         | GrammarBackend: one per model; bounded LRU cache of compiled      |
|                 | grammars; makes per-request GrammarStates                         |
| state           | GrammarState (per request) and the per-step batch masks           |

Names are looked up on first use (PEP 562): xgrammar takes about a second to
import, and a server whose requests never ask for a grammar (the house OCR
model's) should not pay it at start-up, nor when a request's `spec` is checked.
"""
import importlib

_HOME = {
    "GrammarBackend": "backend",
    "DEFAULT_GRAMMAR_LIMITS": "spec", "GrammarError": "spec", "GrammarLimits": "spec", "GrammarSpec": "spec",
    "GrammarState": "state", "apply_grammar": "state", "batch_allowed_mask": "state",
    "fill_batch_bitmask": "state", "unpack_bitmask": "state",
}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)

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
