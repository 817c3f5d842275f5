"""Speculative-decoding settings in the spellings operators know from vLLM and SGLang.

`ocrserve engine` reads the same five `EngineConfig` fields (speculative_algorithm,
draft_tokens, ngram_min, ngram_max, draft_model) from three spellings, so a launch
command copied from either project's docs works here or is refused with a reason:

| spelling | flags |
|----------|-------|
| ours     | --speculative-algorithm ngram/draft_model/mtp,                               |
|          | --speculative-num-draft-tokens N, --speculative-ngram-min/-max,              |
|          | --speculative-draft-model-path MODEL                                         |
| SGLang   | --speculative-algorithm NGRAM/STANDALONE/NEXTN, --speculative-num-steps N,   |
|          | --speculative-eagle-topk 1, --speculative-num-draft-tokens N + 1             |
| vLLM     | --speculative-config '{"method": "ngram", "num_speculative_tokens": 4,       |
|          | "prompt_lookup_min": 2, "prompt_lookup_max": 4}', '{"method": "mtp",         |
|          | "num_speculative_tokens": 1}' or '{"model": MODEL, ...}'                     |

The rules, each there so that no flag is silently ignored:
- `draft_tokens` is how many tokens are drafted per request and step: one chain,
  verified after the request's pending token. `--speculative-num-draft-tokens`
  alone sets it (as always here). SGLang's `--speculative-num-steps N` is the
  chain's length, so it sets it too; SGLang counts the token the chain grows from
  among its draft tokens (for top-k 1 it makes num_draft_tokens num_steps + 1),
  so given together, num-draft-tokens must be num-steps + 1, and N are drafted.
- top-k is 1: we verify a single chain, not a tree.
- MTP: vLLM's "mtp" (and its model-named aliases such as "deepseek_mtp" or
  "glm4_moe_mtp") and SGLang's NEXTN are one method here, the model's own
  multi-token-prediction layers chained N times; a model without them is refused
  when the engine starts.
- Methods we do not have (EAGLE, Medusa, ...) and unknown keys of the vLLM
  JSON are refused, naming what is supported.
- Both spellings at once are refused unless every setting both name agrees.
- A setting the chosen method does not use (n-gram sizes for a draft model, a
  draft size without drafting) is refused.
"""
from __future__ import annotations

import json

SUPPORTED = ("ngram (prompt lookup), draft_model (a smaller model with the same tokenizer; SGLang's STANDALONE) and "
             "mtp (the model's multi-token-prediction layers; SGLang's NEXTN)")
ALGORITHMS = {"auto": "auto", "none": "none", "ngram": "ngram", "draft_model": "draft_model",
              "standalone": "draft_model", "mtp": "mtp", "nextn": "mtp"}
VLLM_KEYS = ("method", "model", "num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max")
DEFAULTS = {"speculative_algorithm": "auto", "draft_tokens": 4, "ngram_min": 2, "ngram_max": 4, "draft_model": None}
# EngineConfig field -> how each spelling names it, for messages
VLLM_NAMES = {"speculative_algorithm": "method", "draft_tokens": "num_speculative_tokens",
              "ngram_min": "prompt_lookup_min", "ngram_max": "prompt_lookup_max", "draft_model": "model"}
USED_BY = {"draft_tokens": ("ngram", "draft_model", "mtp"), "ngram_min": ("ngram",), "ngram_max": ("ngram",),
           "draft_model": ("draft_model",)}
FLAG_NAMES = {"speculative_algorithm": "--speculative-algorithm",
              "draft_tokens": "--speculative-num-draft-tokens/--speculative-num-steps",
              "ngram_min": "--speculative-ngram-min", "ngram_max": "--speculative-ngram-max",
              "draft_model": "--speculative-draft-model-path"}


def parse_speculative_config(text: str) -> dict:
    """vLLM's --speculative-config value: a JSON object (ValueError otherwise)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--speculative-config is not valid JSON ({exc}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"--speculative-config must be a JSON object, got {text!r}")
    return value


def speculative_settings(*, config: dict | None = None, algorithm: str | None = None,
                         num_draft_tokens: int | None = None, num_steps: int | None = None,
                         eagle_topk: int | None = None, ngram_min: int | None = None, ngram_max: int | None = None,
                         draft_model: str | None = None) -> dict:
    """The `EngineConfig` speculative fields the flags ask for (None: the flag was not given);
    ValueError naming the flag when they ask for something this engine does not do."""
    flags = _from_flags(algorithm, num_draft_tokens, num_steps, eagle_topk, ngram_min, ngram_max, draft_model)
    merged = dict(flags)
    if config is not None:
        for field, value in _from_vllm(config).items():
            if field in flags and flags[field] != value:
                raise ValueError(f"--speculative-config says {VLLM_NAMES[field]}={value!r} but {FLAG_NAMES[field]} "
                                 f"says {flags[field]!r}; give one form, or make them agree")
            merged[field] = value
    return _completed(merged)


def _from_flags(algorithm, num_draft_tokens, num_steps, eagle_topk, ngram_min, ngram_max, draft_model) -> dict:
    given: dict = {}
    if algorithm is not None:
        given["speculative_algorithm"] = _method(algorithm.lower(), "--speculative-algorithm")
    if eagle_topk is not None and eagle_topk != 1:
        raise ValueError(f"--speculative-eagle-topk {eagle_topk} is not supported: this engine verifies a single "
                         "chain of drafted tokens, not a tree; give 1 or leave it out")
    if num_steps is not None:
        if num_draft_tokens is not None and num_draft_tokens != num_steps + 1:
            raise ValueError(f"--speculative-num-steps {num_steps} drafts a chain of {num_steps} tokens, which "
                             f"SGLang counts as {num_steps + 1} draft tokens (the token it grows from included); "
                             f"--speculative-num-draft-tokens {num_draft_tokens} contradicts it: give "
                             f"{num_steps + 1} or leave it out")
        given["draft_tokens"] = num_steps
    elif num_draft_tokens is not None:
        given["draft_tokens"] = num_draft_tokens
    for field, value in (("ngram_min", ngram_min), ("ngram_max", ngram_max), ("draft_model", draft_model)):
        if value is not None:
            given[field] = value
    return given


def _from_vllm(config: dict) -> dict:
    unknown = sorted(set(config) - set(VLLM_KEYS))
    if unknown:
        raise ValueError(f"--speculative-config: unknown key(s) {', '.join(unknown)}; this engine reads "
                         f"{', '.join(VLLM_KEYS)}")
    given: dict = {}
    for key in ("num_speculative_tokens", "prompt_lookup_min", "prompt_lookup_max"):
        if key in config:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"--speculative-config: {key} must be a positive integer, got {value!r}")
            given[{"num_speculative_tokens": "draft_tokens", "prompt_lookup_min": "ngram_min",
                   "prompt_lookup_max": "ngram_max"}[key]] = value
    for key in ("method", "model"):
        if key in config and not (isinstance(config[key], str) and config[key]):
            raise ValueError(f"--speculative-config: {key} must be a non-empty string, got {config[key]!r}")
    method, model = config.get("method"), config.get("model")
    if method is None:
        if model is None:
            raise ValueError(f"--speculative-config names neither a method nor a draft model; supported: {SUPPORTED}")
        method = "draft_model"   # vLLM: a model without a method is a draft model
    given["speculative_algorithm"] = _method(method.lower(), "--speculative-config method")
    if given["speculative_algorithm"] in ("auto", "none"):
        raise ValueError(f"--speculative-config method {method!r} drafts nothing; supported: {SUPPORTED} "
                         "(leave the flag out to draft nothing)")
    if model is not None:
        given["draft_model"] = model
    return given


def _method(name: str, flag: str) -> str:
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    if name.endswith("_mtp"):   # vLLM's model-named MTP methods (deepseek_mtp, glm4_moe_mtp, ...)
        return "mtp"
    raise ValueError(f"{flag} {name!r} is not supported by this engine; supported: {SUPPORTED}")


def _completed(given: dict) -> dict:
    """The given settings with defaults filled in; refused where the method would not use one."""
    algorithm = given.get("speculative_algorithm", "auto")
    for field, methods in USED_BY.items():
        if field in given and algorithm not in methods:
            raise ValueError(f"{FLAG_NAMES[field]} (vLLM: {VLLM_NAMES[field]}) applies to {' and '.join(methods)} "
                             f"drafts and would be ignored with speculative algorithm {algorithm!r}; choose "
                             f"one of those with --speculative-algorithm (or \"method\" in --speculative-config)")
    if algorithm == "draft_model" and "draft_model" not in given:
        raise ValueError("speculative algorithm draft_model needs the draft model: --speculative-draft-model-path "
                         "MODEL (vLLM: \"model\" in --speculative-config)")
    settings = {field: given.get(field, default) for field, default in DEFAULTS.items()}
    # one n-gram size given: the other keeps its default where it can, else meets it
    if "ngram_min" in given and "ngram_max" not in given:
        settings["ngram_max"] = max(settings["ngram_max"], given["ngram_min"])
    if "ngram_max" in given and "ngram_min" not in given:
        settings["ngram_min"] = min(settings["ngram_min"], given["ngram_max"])
    return settings
