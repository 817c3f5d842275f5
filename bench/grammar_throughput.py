"""Constrained-decoding throughput: the same requests with and without a JSON schema,
in one run of the in-process engine (SmolLM2-135M). Prints a table and writes JSON.

    .venv/bin/python bench/grammar_throughput.py --threads 1 --out artifacts/grammar_throughput.json

Target (issue 7): constrained tokens/s >= 90% of unconstrained.

How the two sides are made comparable. Throughput on a batch depends on how
many tokens each request makes, because that sets the batch size at every step.
So both sides run the same N invoice-extraction chat prompts, all submitted at
once, greedy, with the prefix cache flushed before each pass, and:
- constrained: each request has the invoice schema and `max_tokens`; it ends
  when its JSON is complete (or at `max_tokens`). Its generated token counts
  n_1..n_N are recorded.
- free: each request i has `max_tokens = n_i` and `ignore_eos`, so it makes
  exactly n_i tokens. Both sides then make the same tokens per request and
  the batch shrinks the same way, step by step; only the grammar differs
  (mask per step, matcher per token).
tokens/s = generated tokens / wall time of the pass (admission, prefill and
decode). Beside it, tokens per CPU-second of this process (`time.process_time`):
on a shared, oversubscribed machine wall time swings with other people's load,
CPU time much less, so its ratio is the steadier estimate of the grammar's cost. The schema is compiled once before timing (its cold compile time is
reported apart): the cache keeps it, as it would in a server. Passes alternate
(constrained, free, constrained, free, ...) to spread drift on a noisy machine;
the ratio quoted is of the medians.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jsonschema  # noqa: E402
import torch  # noqa: E402

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.grammar import GrammarSpec  # noqa: E402
from engine.sampling_params import SamplingParams  # noqa: E402

INVOICE = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "maxLength": 20},
        "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "vendor": {"type": "string", "maxLength": 40},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "total": {"type": "number", "minimum": 0},
        "line_items": {
            "type": "array", "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"description": {"type": "string", "maxLength": 40}, "amount": {"type": "number"}},
                "required": ["description", "amount"], "additionalProperties": False,
            },
        },
    },
    "required": ["invoice_number", "date", "vendor", "currency", "total", "line_items"],
    "additionalProperties": False,
}
VENDORS = ["Acme GmbH", "Globex Ltd", "Initech Inc", "Umbrella SA", "Stark Supplies", "Wayne Paper Co",
           "Hooli Cloud", "Soylent Foods", "Tyrell Parts", "Cyberdyne Labs", "Wonka Sweets", "Duff Brewing",
           "Vandelay Imports", "Pied Piper", "Oscorp Metals", "Gringotts Bank"]
ITEMS = ["printer paper", "toner cartridges", "consulting hours", "server rental", "office chairs", "coffee beans"]


def invoice_prompt(i: int) -> str:
    vendor, first, second = VENDORS[i % len(VENDORS)], ITEMS[i % len(ITEMS)], ITEMS[(i + 3) % len(ITEMS)]
    a, b = 120 + 37 * i, 45 + 11 * i
    return (f"Extract the invoice fields as JSON.\n\nInvoice INV-{2040 + i} from {vendor}, dated "
            f"2024-03-{1 + i % 28:02d}.\n- {first}: {a}.00 EUR\n- {second}: {b}.50 EUR\n"
            f"Total due: {a + b}.50 EUR.")


def chat_ids(tok, text: str) -> list[int]:
    out = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def run_pass(engine: Engine, prompts: list[list[int]], params: list[SamplingParams]) -> dict:
    """Submit every request at once, step until done; the counts and texts in submission order."""
    engine.flush_cache()
    start, cpu_start = time.perf_counter(), time.process_time()
    request_ids = [engine.add_request(ids, p).request_id for ids, p in zip(prompts, params)]
    finished = {}
    while engine.has_work:
        for out in engine.step():
            if out.finished:
                finished[out.request_id] = out
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    outputs = [finished[rid] for rid in request_ids]
    num_tokens = [out.num_output_tokens for out in outputs]
    return {"seconds": seconds, "num_tokens": num_tokens, "tok_s": sum(num_tokens) / seconds,
            "cpu_seconds": cpu_seconds, "tok_per_cpu_s": sum(num_tokens) / cpu_seconds,
            "texts": [out.text for out in outputs], "finish_reasons": [out.finish_reason for out in outputs]}


def format_rates(passes: list[dict], key: str) -> str:
    return ", ".join(f"{p[key]:.1f}" for p in passes)


def count_valid(texts: list[str]) -> int:
    num_valid = 0
    for text in texts:
        try:
            jsonschema.validate(json.loads(text), INVOICE)
            num_valid += 1
        except (ValueError, jsonschema.ValidationError):
            pass
    return num_valid


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3, help="passes per side, alternating sides")
    ap.add_argument("--out", default="artifacts/grammar_throughput.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    engine = Engine(EngineConfig(model="smollm2-135m", context_length=1024, kv_tokens=16384,
                                 num_threads=args.threads))
    tok = engine.tokenizer
    prompts = [chat_ids(tok, invoice_prompt(i)) for i in range(args.requests)]
    spec = GrammarSpec(json_schema=json.dumps(INVOICE))
    started = time.perf_counter()
    engine.grammar_backend().compile(spec)          # cold compile (worker start included), outside the timing
    compile_s = time.perf_counter() - started
    engine.generate([prompts[0]], SamplingParams(temperature=0, max_tokens=4))   # warm-up

    constrained_params = [SamplingParams(temperature=0, max_tokens=args.max_tokens, grammar=spec)] * len(prompts)
    constrained_passes, free_passes = [], []
    for _ in range(args.repeats):      # constrained, free, constrained, free, ...
        constrained_passes.append(run_pass(engine, prompts, constrained_params))
        lengths = constrained_passes[0]["num_tokens"]
        free_params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in lengths]
        free_passes.append(run_pass(engine, prompts, free_params))
    engine.close()

    if not all(p["num_tokens"] == lengths for p in constrained_passes + free_passes):   # checked under -O too
        raise RuntimeError("token counts differ between passes: the comparison would be unfair")
    free_tok_s = statistics.median(p["tok_s"] for p in free_passes)
    constrained_tok_s = statistics.median(p["tok_s"] for p in constrained_passes)
    free_cpu = statistics.median(p["tok_per_cpu_s"] for p in free_passes)
    constrained_cpu = statistics.median(p["tok_per_cpu_s"] for p in constrained_passes)
    texts = constrained_passes[0]["texts"]
    results = {
        "threads": args.threads, "torch": torch.__version__, "cpu_count": os.cpu_count(),
        "requests": args.requests, "max_tokens": args.max_tokens, "repeats": args.repeats,
        "generated_tokens_per_pass": sum(lengths), "tokens_per_request": [min(lengths), max(lengths)],
        "schema_cold_compile_s": compile_s,
        "free_tok_s": [p["tok_s"] for p in free_passes],
        "constrained_tok_s": [p["tok_s"] for p in constrained_passes],
        "free_tok_s_median": free_tok_s, "constrained_tok_s_median": constrained_tok_s,
        "ratio": constrained_tok_s / free_tok_s, "target_ratio": 0.9,
        "free_tok_per_cpu_s": [p["tok_per_cpu_s"] for p in free_passes],
        "constrained_tok_per_cpu_s": [p["tok_per_cpu_s"] for p in constrained_passes],
        "cpu_ratio": constrained_cpu / free_cpu,
        "constrained_valid": count_valid(texts),
        "constrained_finish_reasons": constrained_passes[0]["finish_reasons"],
        "example_output": texts[0],
    }

    print(f"{args.requests} requests, {sum(lengths)} generated tokens per pass "
          f"({min(lengths)}..{max(lengths)} each), {args.threads} thread(s), {args.repeats} passes per side")
    print(f"{'side':14} {'tok/s (median)':>15} {'passes':>24} {'tok/CPU-s (median)':>19} {'passes':>24}")
    for side, wall, cpu, passes in (("free", free_tok_s, free_cpu, free_passes),
                                    ("json schema", constrained_tok_s, constrained_cpu, constrained_passes)):
        print(f"{side:14} {wall:>15.1f} {format_rates(passes, 'tok_s'):>24} {cpu:>19.1f} "
              f"{format_rates(passes, 'tok_per_cpu_s'):>24}")
    print(f"ratio constrained/free: {results['ratio']:.3f} wall, {results['cpu_ratio']:.3f} CPU (target >= 0.90); "
          f"valid outputs: {results['constrained_valid']}/{args.requests}; cold compile {compile_s:.2f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
