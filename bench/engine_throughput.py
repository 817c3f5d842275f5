"""Engine throughput: ocrserve's engine and Hugging Face `generate` on the same
SmolLM2-135M prompts, in one run. Prints a table and writes JSON.

    .venv/bin/python bench/engine_throughput.py --threads 2 --out artifacts/engine_throughput.json

Workloads
- batch 1: requests one at a time (64 new tokens each).
- 32 concurrent: 32 chat prompts with output lengths spread over 16..256
  (ignore_eos so every request makes exactly its length). Ours schedules them
  with continuous batching. HF `generate` takes one left-padded batch and must
  run all rows to the longest length: we report its raw rate (every row x 256)
  and its useful rate (the tokens the requests asked for) — the ratio quoted is
  against the useful rate, since that is what the callers receive.
- few-shot: 24 requests sharing a ~1,500-token few-shot prefix, each with its
  own question, sent one after another; prefix cache on vs off. TTFT = time
  from submission to the first generated token.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.sampling_params import SamplingParams  # noqa: E402

QUESTIONS = [
    "What is the capital of France?", "Write a haiku about autumn.", "Explain gravity simply.",
    "List three prime numbers.", "Why is the sky blue?", "What does a compiler do?",
    "Describe the smell of rain.", "Name a famous painter.", "How do bees make honey?",
    "What is a black hole?", "Give me a pet turtle name.", "Summarise Hamlet in one line.",
    "What is 12 times 7?", "How do airplanes fly?", "What is DNA?", "Tell me about the moon.",
]


def chat_ids(tok, text: str) -> list[int]:
    out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def run_ours_stream(engine: Engine, prompts, params_list):
    """Submit all at once; return (tokens, seconds, TTFT per request)."""
    ttft, t0s, tokens = {}, {}, 0
    start = time.perf_counter()
    for ids, p in zip(prompts, params_list):
        req = engine.add_request(ids, p)
        t0s[req.request_id] = time.perf_counter()
    while engine.has_work:
        for out in engine.step():
            if out.request_id not in ttft and out.delta_token_ids:
                ttft[out.request_id] = time.perf_counter() - t0s[out.request_id]
            if out.finished:
                tokens += out.num_output_tokens
    return tokens, time.perf_counter() - start, list(ttft.values())


def hf_generate(model, prompts, max_new_tokens: int, pad_id: int):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(ids, attention_mask=mask, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                             do_sample=False, pad_token_id=pad_id)
    return out.shape[0] * (out.shape[1] - width), time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="artifacts/engine_throughput.json")
    ap.add_argument("--concurrent", type=int, default=32)
    ap.add_argument("--quick", action="store_true", help="smaller runs, for a smoke test")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(0)
    results: dict = {"threads": args.threads, "torch": torch.__version__, "cpu_count": os.cpu_count()}

    engine = Engine(EngineConfig(model="smollm2-135m", context_length=2048, kv_tokens=32768, max_prefill_tokens=512))
    tok = engine.tokenizer
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(str(engine.model_path), dtype=torch.float32).eval()
    pad = tok.pad_token_id if tok.pad_token_id is not None else 2

    # -- batch 1 -----------------------------------------------------------------
    n1 = 2 if args.quick else 4
    b1_new = 32 if args.quick else 64
    b1_prompts = [chat_ids(tok, q) for q in QUESTIONS[:n1]]
    engine.generate([b1_prompts[0]], SamplingParams(temperature=0, max_tokens=4))  # warm-up
    p1 = SamplingParams(temperature=0, max_tokens=b1_new, ignore_eos=True)
    t = time.perf_counter()
    ours_tokens = sum(engine.generate([p], p1)[0].num_output_tokens for p in b1_prompts)
    ours_b1 = ours_tokens / (time.perf_counter() - t)
    hf_tokens, hf_time = 0, 0.0
    for p in b1_prompts:
        n, dt = hf_generate(hf, [p], b1_new, pad)
        hf_tokens, hf_time = hf_tokens + n, hf_time + dt
    hf_b1 = hf_tokens / hf_time
    results["batch1"] = {"ours_tok_s": ours_b1, "hf_tok_s": hf_b1, "ratio": ours_b1 / hf_b1, "new_tokens": b1_new}

    # -- N concurrent, mixed output lengths ------------------------------------
    nc = 8 if args.quick else args.concurrent
    max_len = 64 if args.quick else 256
    conc_prompts = [chat_ids(tok, QUESTIONS[i % len(QUESTIONS)] + f" (variant {i})") for i in range(nc)]
    lengths = [rng.randint(16, max_len) for _ in range(nc)]
    params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths]
    engine.flush_cache()
    tokens, dt, ttfts = run_ours_stream(engine, conc_prompts, params)
    ours_c = tokens / dt
    _, hf_prefill = hf_generate(hf, conc_prompts, 1, pad)
    hf_raw_tokens, hf_dt = hf_generate(hf, conc_prompts, max(lengths), pad)
    useful = sum(lengths)
    results["concurrent"] = {
        "requests": nc, "output_lengths": [min(lengths), max(lengths)], "useful_tokens": useful,
        "ours_tok_s": ours_c, "ours_seconds": dt, "ours_ttft_mean_s": statistics.mean(ttfts),
        "hf_raw_tok_s": hf_raw_tokens / hf_dt, "hf_useful_tok_s": useful / hf_dt, "hf_seconds": hf_dt,
        "hf_ttft_s": hf_prefill, "ratio_vs_hf_useful": ours_c / (useful / hf_dt),
        "ratio_vs_hf_raw": ours_c / (hf_raw_tokens / hf_dt), "ratio_vs_hf_batch1_rate": ours_c / hf_b1,
    }

    # -- few-shot shared prefix, cache on / off --------------------------------
    shots = "\n\n".join(
        f"Q: {q}\nA: Here is a short, careful answer to the question about {q.lower().rstrip('?.')}, "
        "given in plain words with one example and no more than three sentences in total."
        for q in QUESTIONS * 2
    )
    nf = 6 if args.quick else 24
    fs_prompts = [chat_ids(tok, shots + f"\n\nQ: {QUESTIONS[i % 16]} (case {i})\nA:") for i in range(nf)]
    fs_params = [SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)] * nf
    few = {"prefix_tokens": len(fs_prompts[0]), "requests": nf}
    for enabled in (False, True):
        eng = engine if enabled else Engine(EngineConfig(model="smollm2-135m", context_length=2048, kv_tokens=32768,
                                                         enable_prefix_cache=False))
        if enabled:
            eng.flush_cache()
        prompt_tokens = sum(len(p) for p in fs_prompts)
        cached = []
        t = time.perf_counter()
        ttft = []
        for ids, p in zip(fs_prompts, fs_params):
            t0 = time.perf_counter()
            eng.add_request(ids, p)
            first = None
            while eng.has_work:
                for out in eng.step():
                    if first is None and out.delta_token_ids:
                        first = time.perf_counter() - t0
                    if out.finished:
                        cached.append(out.num_cached_tokens)
            ttft.append(first)
        key = "cache_on" if enabled else "cache_off"
        few[key] = {"hit_rate": sum(cached) / prompt_tokens, "ttft_mean_s": statistics.mean(ttft),
                    "ttft_mean_after_first_s": statistics.mean(ttft[1:]), "seconds": time.perf_counter() - t}
    few["ttft_speedup"] = few["cache_off"]["ttft_mean_after_first_s"] / few["cache_on"]["ttft_mean_after_first_s"]
    results["few_shot"] = few

    rows = [
        ("batch 1 tok/s", f"{ours_b1:.1f}", f"{hf_b1:.1f}", f"{ours_b1 / hf_b1:.2f}x"),
        (f"{nc} concurrent tok/s (useful)", f"{ours_c:.1f}", f"{useful / hf_dt:.1f}",
         f"{results['concurrent']['ratio_vs_hf_useful']:.2f}x"),
        (f"{nc} concurrent tok/s (HF raw, all rows x {max(lengths)})", "", f"{hf_raw_tokens / hf_dt:.1f}",
         f"{results['concurrent']['ratio_vs_hf_raw']:.2f}x"),
        (f"{nc} concurrent vs HF one request at a time (its batch-1 rate)", f"{ours_c:.1f}", f"{hf_b1:.1f}",
         f"{ours_c / hf_b1:.2f}x"),
        (f"{nc} concurrent mean TTFT s", f"{statistics.mean(ttfts):.2f}", f"{hf_prefill:.2f}", ""),
        ("few-shot hit rate (cache on)", f"{few['cache_on']['hit_rate']:.1%}", "", ""),
        ("few-shot TTFT s, cache off -> on", f"{few['cache_off']['ttft_mean_after_first_s']:.3f} -> "
         f"{few['cache_on']['ttft_mean_after_first_s']:.3f}", "", f"{few['ttft_speedup']:.1f}x"),
    ]
    print(f"{'workload':52} {'ocrserve':>18} {'HF generate':>12} {'ratio':>8}")
    for r in rows:
        print(f"{r[0]:52} {r[1]:>18} {r[2]:>12} {r[3]:>8}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
