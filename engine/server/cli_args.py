"""Command-line arguments of `ocrserve engine`, turned into `EngineConfig` and `ServerSettings`."""
from __future__ import annotations

import argparse
import os
import re

from engine.server.settings import DEFAULT_PORT, ServerSettings

BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
              "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text: str) -> int:
    """'1073741824', '1GiB', '512MiB', '1.5GB' -> bytes."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if match is None or match.group(2).lower() not in BYTE_UNITS:
        raise argparse.ArgumentTypeError(f"not a byte size: {text!r} (examples: 2147483648, 2GiB, 512MiB)")
    num_bytes = int(float(match.group(1)) * BYTE_UNITS[match.group(2).lower()])
    if num_bytes <= 0:
        raise argparse.ArgumentTypeError(f"byte size must be positive: {text!r}")
    return num_bytes


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer: {text!r}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more: {text!r}")
    return value


def speculative_config(text: str) -> dict:
    from engine.spec.flags import parse_speculative_config

    try:
        return parse_speculative_config(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ocrserve engine",
        description="Serve one model with the ocrserve engine behind an OpenAI-compatible HTTP API.")
    parser.add_argument("--model", required=True,
                        help="built-in model name (e.g. smollm2-135m), a Hugging Face checkpoint folder, or a .gguf file")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default: loopback only; any other address needs --api-key)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to bind (0: any free port)")
    kv = parser.add_mutually_exclusive_group()
    kv.add_argument("--kv-tokens", type=positive_int, help="KV pool size in tokens")
    kv.add_argument("--kv-memory", type=parse_bytes, help="KV pool size in bytes (e.g. 2GiB)")
    parser.add_argument("--context-length", type=positive_int, help="longest prompt+output (default: the model's)")
    parser.add_argument("--max-prefill-tokens", type=positive_int, default=512,
                        help="chunked-prefill token budget per step")
    parser.add_argument("--max-running-requests", type=positive_int, default=64)
    parser.add_argument("--speculative-tokens", type=int, default=32,
                        help="drafted tokens verified per step from a whole-output draft: the model's own "
                             "(house-ocr's CTC reading) or a request's draft_text (a PDF text layer's line); 0: off")
    # Speculative drafts for every greedy request, in our, SGLang's and vLLM's spellings (engine/spec/flags.py).
    parser.add_argument("--speculative-algorithm", type=str.lower, default=None,
                        help="drafts for the other requests: ngram (prompt lookup, any model: extraction "
                             "copies its values out of the prompt), mtp or SGLang's NEXTN (the model's own "
                             "multi-token-prediction layers: GLM-OCR), draft_model or SGLang's standalone "
                             "(--speculative-draft-model-path); auto/none (default auto): only a model's own drafts. "
                             "Case-insensitive (SGLang's NGRAM works); EAGLE is refused")
    parser.add_argument("--speculative-num-draft-tokens", type=positive_int, default=None,
                        help="the most tokens drafted per request and step, one chain (default 4); with "
                             "--speculative-num-steps N it must be N + 1, SGLang's count for a chain")
    parser.add_argument("--speculative-num-steps", type=positive_int, default=None,
                        help="SGLang's spelling: a chain of N drafted tokens per step (sets the draft size to N)")
    parser.add_argument("--speculative-eagle-topk", type=int, default=None,
                        help="SGLang's spelling; only 1: drafts are verified as a single chain, not a tree")
    parser.add_argument("--speculative-draft-model-path", default=None, metavar="MODEL",
                        help="the draft model (a built-in name, a checkpoint folder or a .gguf file) with the same "
                             "tokenizer, served in this process; with --speculative-algorithm draft_model")
    parser.add_argument("--speculative-ngram-min", type=positive_int, default=None,
                        help="n-gram drafts: the shortest tail of the output matched in the prompt (default 2)")
    parser.add_argument("--speculative-ngram-max", type=positive_int, default=None,
                        help="n-gram drafts: the longest tail matched, tried first (default 4)")
    parser.add_argument("--speculative-config", type=speculative_config, default=None, metavar="JSON",
                        help="vLLM's spelling, instead of the flags above or agreeing with them: "
                             "'{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_min\": 2, "
                             "\"prompt_lookup_max\": 4}', '{\"method\": \"mtp\", \"num_speculative_tokens\": 1}' or "
                             "'{\"model\": MODEL, \"num_speculative_tokens\": 4}'; other methods (eagle, medusa, "
                             "...) and keys are refused")
    parser.add_argument("--no-ctc-rescoring", action="store_true",
                        help="house-ocr: plain greedy tokens, without keeping the CTC reading where it scores higher")
    parser.add_argument("--schedule-policy", choices=("fcfs", "lpm"), default="fcfs")
    parser.add_argument("--disable-prefix-cache", action="store_true")
    parser.add_argument("--share-prefix-cache-across-tenants", action="store_true")
    parser.add_argument("--num-threads", type=positive_int, help="torch threads on CPU")
    parser.add_argument("--debug", action="store_true", help="engine debug checks (poisoned KV slots, owners)")
    parser.add_argument("--device", default="cpu",
                        help="torch device for weights and KV pool (cpu, cuda, cuda:1, auto: CUDA when present)")
    parser.add_argument("--attention-backend", choices=("auto", "torch", "triton"), default="auto",
                        help="attention kernels: triton (CUDA only), torch, auto (triton on CUDA, torch elsewhere)")
    parser.add_argument("--kv-memory-fraction", type=float, default=0.85,
                        help="on CUDA without --kv-tokens/--kv-memory: the share of the GPU memory left free "
                             "after the weights that the KV pool takes (default 0.85)")
    parser.add_argument("--cuda-graph-max-batch", type=non_negative_int, default=0,
                        help="replay CUDA graphs for decode steps of up to this many requests (triton backend, "
                             "text models); 0: off (the default)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                        help="weights and KV dtype (keep float32 on CPU)")
    parser.add_argument("--grammar-compile-timeout", type=positive_float, default=10.0,
                        help="seconds a JSON-schema/regex/EBNF compile may take before the request is refused")
    parser.add_argument("--grammar-cache-memory", type=parse_bytes, default=64 << 20,
                        help="bytes of compiled grammars kept (LRU)")
    parser.add_argument("--max-image-bytes", type=parse_bytes, default=20 << 20,
                        help="largest encoded image accepted (400 above)")
    parser.add_argument("--max-image-pixels", type=positive_int, default=40_000_000,
                        help="largest width*height accepted, read before decoding")
    parser.add_argument("--max-images-per-request", type=positive_int, default=8)
    parser.add_argument("--api-key", default=os.environ.get("OCRSERVE_ENGINE_API_KEY"),
                        help="required as 'Authorization: Bearer KEY' on /v1/* (env OCRSERVE_ENGINE_API_KEY)")
    parser.add_argument("--admin-key", default=os.environ.get("OCRSERVE_ENGINE_ADMIN_KEY"),
                        help="required on /flush_cache; default: the API key (env OCRSERVE_ENGINE_ADMIN_KEY); "
                             "with neither, /flush_cache is refused")
    parser.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                        help="a Host name clients may use besides loopback and --host (repeatable), "
                             "e.g. the engine's service name in docker compose")
    parser.add_argument("--served-model-name", action="append", default=[],
                        help="name(s) clients use in 'model' (repeatable; default: the engine's model name)")
    parser.add_argument("--max-request-bytes", type=parse_bytes, default=ServerSettings.max_request_bytes,
                        help="largest request body accepted (413 above)")
    parser.add_argument("--request-timeout", type=positive_float, default=ServerSettings.request_timeout_s,
                        help="seconds one request may take, body upload and generation included")
    parser.add_argument("--keep-alive-timeout", type=positive_int, default=ServerSettings.keep_alive_timeout_s,
                        help="seconds an idle keep-alive connection stays open between requests")
    parser.add_argument("--shutdown-grace", type=non_negative_int, default=ServerSettings.shutdown_grace_s,
                        help="seconds in-flight requests get to finish on SIGTERM before they are aborted")
    parser.add_argument("--image-url-allowlist", action="append", default=[], metavar="HOST",
                        help="host an http(s) image_url may name (repeatable; default: none)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"),
                        default=ServerSettings.log_level)
    return parser


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    return ServerSettings(
        host=args.host, port=args.port, api_key=args.api_key or None, admin_key=args.admin_key or None,
        allowed_hosts=tuple(args.allowed_host),
        served_model_names=tuple(args.served_model_name), max_request_bytes=args.max_request_bytes,
        request_timeout_s=args.request_timeout, keep_alive_timeout_s=args.keep_alive_timeout,
        shutdown_grace_s=args.shutdown_grace, image_url_host_allowlist=tuple(args.image_url_allowlist),
        log_level=args.log_level,
    )


def engine_config_from_args(args: argparse.Namespace):
    """The engine's `EngineConfig` (ValueError when the engine refuses the combination)."""
    from engine.config import EngineConfig
    from engine.spec.flags import speculative_settings

    speculative = speculative_settings(
        config=args.speculative_config, algorithm=args.speculative_algorithm,
        num_draft_tokens=args.speculative_num_draft_tokens, num_steps=args.speculative_num_steps,
        eagle_topk=args.speculative_eagle_topk, ngram_min=args.speculative_ngram_min,
        ngram_max=args.speculative_ngram_max, draft_model=args.speculative_draft_model_path)
    return EngineConfig(
        model=args.model, kv_tokens=args.kv_tokens, kv_memory_bytes=args.kv_memory,
        context_length=args.context_length, max_prefill_tokens=args.max_prefill_tokens,
        max_running_requests=args.max_running_requests, schedule_policy=args.schedule_policy,
        speculative_tokens=args.speculative_tokens, **speculative,
        ctc_rescoring=not args.no_ctc_rescoring,
        enable_prefix_cache=not args.disable_prefix_cache,
        share_prefix_cache_across_tenants=args.share_prefix_cache_across_tenants,
        num_threads=args.num_threads, debug=args.debug, device=args.device, dtype=args.dtype,
        attention_backend=args.attention_backend, kv_memory_fraction=args.kv_memory_fraction,
        cuda_graph_max_batch=args.cuda_graph_max_batch,
        grammar_compile_timeout_s=args.grammar_compile_timeout, grammar_cache_bytes=args.grammar_cache_memory,
    )


def multimodal_config_from_args(args: argparse.Namespace):
    from engine.multimodal.config import MultimodalConfig

    return MultimodalConfig(max_image_bytes=args.max_image_bytes, max_image_pixels=args.max_image_pixels,
                            max_images_per_request=args.max_images_per_request)
