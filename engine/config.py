"""Engine configuration: what the operator chooses. Values found at run time
(number of KV slots, EOS ids, context length of the loaded model) live on the
objects that found them, never written back here."""
from __future__ import annotations

from dataclasses import dataclass

SCHEDULE_POLICIES = ("fcfs", "lpm")


@dataclass(frozen=True)
class EngineConfig:
    model: str                          # built-in name, HF checkpoint folder, or .gguf path
    kv_tokens: int | None = None        # KV pool budget in tokens, or ...
    kv_memory_bytes: int | None = None  # ... in bytes (K and V, all layers)
    context_length: int | None = None   # default: the model's own (capped by the pool)
    max_prefill_tokens: int = 512       # chunked-prefill token budget per step
    max_running_requests: int = 64
    schedule_policy: str = "fcfs"       # "lpm": longest cached prefix first
    enable_prefix_cache: bool = True
    share_prefix_cache_across_tenants: bool = False
    num_threads: int | None = None      # torch intra-op threads; None leaves torch's choice
    device: str = "cpu"                 # "cpu", "cuda", "cuda:N", "auto" (CUDA when present); no silent fallback
    dtype: str = "float32"              # fp32 on CPU: bf16 matmul is far slower there; bfloat16 on a GPU
    attention_backend: str = "auto"     # "torch", "triton" (CUDA), "auto": triton on CUDA, torch elsewhere
    # On CUDA with no kv_tokens/kv_memory_bytes: the KV pool takes this share of the GPU memory
    # left free once the weights are loaded.
    kv_memory_fraction: float = 0.85
    # Decode steps of up to this many requests replay CUDA graphs (text models, triton backend);
    # 0: off. Off by default until a GPU run has checked it (bench/gpu_check.sh measures it).
    cuda_graph_max_batch: int = 0
    debug: bool = False                 # poison freed KV slots, check owners on every write
    seed: int = 0                       # seeds requests that give no seed of their own
    grammar_compile_timeout_s: float = 10.0  # a grammar compile past this is refused (400)
    grammar_cache_bytes: int = 64 << 20      # compiled grammars kept, LRU by size
    # Speculative decoding from a draft of the whole output: a model's own (house-ocr's CTC head;
    # greedy requests) or a request's `draft_text` (any request): up to this many drafted tokens
    # verified per step; 0 turns both off.
    speculative_tokens: int = 32
    # Models whose config sets a CTC weight (house-ocr): a finished greedy line keeps the CTC
    # head's reading where it scores higher under both heads (engine/models/house_ocr.py).
    # False: plain greedy tokens.
    ctc_rescoring: bool = True
    # Drafts for every other greedy request (engine/spec/), up to `draft_tokens` a step: "auto" and
    # "none": only the model's own (above); "ngram": prompt lookup, matching the last `ngram_max`
    # down to `ngram_min` tokens of prompt + output earlier in them; "draft_model": greedy tokens of
    # `draft_model` (a smaller model with the same tokenizer, served in this process); "mtp": the
    # model's multi-token-prediction layers (GLM-OCR's), chained `draft_tokens` times. The CLI
    # also takes vLLM's and SGLang's spellings of these (engine/spec/flags.py).
    speculative_algorithm: str = "auto"
    draft_tokens: int = 4
    ngram_min: int = 2
    ngram_max: int = 4
    draft_model: str | None = None
    draft_kv_tokens: int | None = None   # the draft model's KV pool (default: as an engine of its own)

    def __post_init__(self) -> None:
        if self.kv_tokens is not None and self.kv_memory_bytes is not None:
            raise ValueError("give the KV budget in tokens or in bytes, not both")
        if self.kv_tokens is not None and self.kv_tokens < 1:
            raise ValueError(f"kv_tokens must be positive, got {self.kv_tokens}")
        if self.kv_memory_bytes is not None and self.kv_memory_bytes < 1:
            raise ValueError(f"kv_memory_bytes must be positive, got {self.kv_memory_bytes}")
        if self.context_length is not None and self.context_length < 2:
            raise ValueError(f"context_length must be at least 2, got {self.context_length}")
        if self.max_prefill_tokens < 1:
            raise ValueError(f"max_prefill_tokens must be positive, got {self.max_prefill_tokens}")
        if self.max_running_requests < 1:
            raise ValueError(f"max_running_requests must be positive, got {self.max_running_requests}")
        if self.schedule_policy not in SCHEDULE_POLICIES:
            raise ValueError(f"schedule_policy must be one of {SCHEDULE_POLICIES}, got {self.schedule_policy!r}")
        if self.grammar_compile_timeout_s <= 0:
            raise ValueError(f"grammar_compile_timeout_s must be positive, got {self.grammar_compile_timeout_s}")
        if self.speculative_tokens < 0:
            raise ValueError(f"speculative_tokens must not be negative, got {self.speculative_tokens}")
        if self.grammar_cache_bytes < 1:
            raise ValueError(f"grammar_cache_bytes must be positive, got {self.grammar_cache_bytes}")
        if self.speculative_algorithm not in ("auto", "none", "ngram", "draft_model", "mtp"):
            raise ValueError("speculative_algorithm must be auto, none, ngram, draft_model or mtp, got "
                             f"{self.speculative_algorithm!r}")
        if (self.speculative_algorithm == "draft_model") != (self.draft_model is not None):
            raise ValueError("a draft model is given with speculative_algorithm draft_model, and only then")
        if self.draft_tokens < 1 or not 1 <= self.ngram_min <= self.ngram_max:
            raise ValueError(f"n-gram drafts need draft_tokens >= 1 and 1 <= ngram_min <= ngram_max, got "
                             f"{self.draft_tokens}, {self.ngram_min}, {self.ngram_max}")
        if self.attention_backend not in ("auto", "torch", "triton"):
            raise ValueError(f"attention_backend must be auto, torch or triton, got {self.attention_backend!r}")
        if self.cuda_graph_max_batch < 0:
            raise ValueError(f"cuda_graph_max_batch must not be negative, got {self.cuda_graph_max_batch}")
        if not 0.0 < self.kv_memory_fraction < 1.0:
            raise ValueError(f"kv_memory_fraction must be between 0 and 1, got {self.kv_memory_fraction}")
        if not (self.device in ("cpu", "cuda", "auto") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be cpu, cuda, cuda:N or auto, got {self.device!r}")
        if self.dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"dtype must be float32, bfloat16 or float16, got {self.dtype!r}")
