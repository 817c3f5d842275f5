"""N-gram (prompt lookup) speculative decoding against none, same engine, same requests, one run.
SmolLM2-135M-Instruct (the default extraction model), fp32 on this CPU. Prints a table, writes JSON.

    .venv/bin/python bench/spec_ngram.py --threads 2 --out artifacts/spec_ngram.json

Workloads (generated documents; the model and the prompts are the product's):
- extraction: the text route's messages (`workers.extraction_prompt.text_messages`: system
  prompt, the document between fences, a JSON template) for invoice-like documents, with the
  schema as a grammar, greedy, `frequency_penalty` 0.5 as the text route sends it;
- transcription: "Copy this text exactly" over the same documents, free greedy.
Each workload runs at concurrency 1 (requests one after another: latency) and all at once
(batch). Passes alternate none/ngram, the prefix cache flushed before each; the figure quoted is
the median pass. Both sides must produce the same tokens (checked: greedy verification is exact).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.grammar import GrammarSpec  # noqa: E402
from engine.sampling_params import SamplingParams  # noqa: E402
from workers.extraction_prompt import text_messages  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "maxLength": 24},
        "date": {"type": "string", "maxLength": 24},
        "seller": {"type": "string", "maxLength": 60},
        "seller_address": {"type": "string", "maxLength": 100},
        "customer": {"type": "string", "maxLength": 60},
        "order_reference": {"type": "string", "maxLength": 24},
        "total": {"type": "number"},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "due_date": {"type": "string", "maxLength": 24},
    },
    "required": ["invoice_number", "date", "seller", "seller_address", "customer", "order_reference", "total",
                 "currency", "due_date"],
    "additionalProperties": False,
}
SELLERS = [("Acme Industrial Supplies GmbH", "12 Harbour Road, 28195 Bremen, Germany"),
           ("Northwind Office Furniture Ltd", "4 Canal Street, Manchester M1 3HE, United Kingdom"),
           ("Globex Paper & Print SA", "Rue de la Loi 200, 1040 Brussels, Belgium"),
           ("Initech Software Services Inc", "1500 Market Street, Philadelphia, PA 19102, USA"),
           ("Umbrella Laboratory Equipment BV", "Keizersgracht 62, 1015 CS Amsterdam, Netherlands"),
           ("Stark Electrical Wholesale Oy", "Mannerheimintie 12, 00100 Helsinki, Finland")]
CUSTOMERS = ["Wayne Logistics", "Tyrell Manufacturing", "Cyberdyne Research", "Oscorp Metals", "Vandelay Imports",
             "Pied Piper Storage"]
ITEMS = ["A4 copier paper, 80 g/m2, 5 reams", "toner cartridge TN-2420, black", "consulting, on-site, hours",
         "server rental, 2 vCPU, monthly", "ergonomic office chair, model K7", "coffee beans, 1 kg, medium roast"]


def document(i: int) -> str:
    seller, address = SELLERS[i % len(SELLERS)]
    lines = []
    total = 0.0
    for k in range(3):
        qty, price = 1 + (i + k) % 4, 19.5 + 13 * ((i * 3 + k) % 7)
        total += qty * price
        lines.append(f"{k + 1}  {ITEMS[(i + k) % len(ITEMS)]}  {qty} x {price:.2f}  {qty * price:.2f}")
    currency = ["EUR", "GBP", "EUR", "USD", "EUR", "EUR"][i % 6]
    return "\n".join([
        seller, address, "", f"INVOICE No. INV-{2040 + i}-{17 * i % 100:02d}", f"Date: 2026-0{1 + i % 9}-{3 + i % 25:02d}",
        f"Bill to: {CUSTOMERS[i % len(CUSTOMERS)]}", f"Your order: PO-{55100 + 7 * i}", "",
        "Pos  Description  Qty x Unit  Amount", *lines, "",
        f"Total due: {total:.2f} {currency}", f"Payable by 2026-1{i % 3}-{10 + i % 18} to IBAN DE44 5001 0517 5407 "
        f"3249 {31 + i}", "Thank you for your business."])


def chat_ids(tok, messages) -> list[int]:
    out = tok.apply_chat_template(messages, add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def run_pass(engine: Engine, prompts, params, together: bool) -> dict:
    engine.flush_cache()
    drafted, accepted, steps = engine.num_draft_tokens, engine.num_accepted_draft_tokens, engine.num_steps
    start, cpu_start = time.perf_counter(), time.process_time()
    outputs = []
    if together:
        ids = [engine.add_request(p, sp).request_id for p, sp in zip(prompts, params)]
        done = {}
        while engine.has_work:
            for out in engine.step():
                if out.finished:
                    done[out.request_id] = out
        outputs = [done[i] for i in ids]
    else:
        for p, sp in zip(prompts, params):
            outputs += engine.generate([p], sp)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    tokens = sum(o.num_output_tokens for o in outputs)
    return {"seconds": seconds, "cpu_seconds": cpu, "tokens": tokens, "tok_s": tokens / seconds,
            "steps": engine.num_steps - steps, "drafted": engine.num_draft_tokens - drafted,
            "accepted": engine.num_accepted_draft_tokens - accepted,
            "outputs": [o.text for o in outputs]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--out", default="artifacts/spec_ngram.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    common = dict(model="smollm2-135m", context_length=2048, kv_tokens=32768, num_threads=args.threads)
    engines = {"none": Engine(EngineConfig(**common, speculative_algorithm="none")),
               "ngram": Engine(EngineConfig(**common, speculative_algorithm="ngram", draft_tokens=args.draft_tokens))}
    tok = engines["none"].tokenizer
    docs = [document(i) for i in range(args.documents)]
    grammar = GrammarSpec(json_schema=json.dumps(SCHEMA))
    workloads = {
        "extraction": ([chat_ids(tok, text_messages(d, SCHEMA)) for d in docs],
                       SamplingParams(temperature=0, max_tokens=300, frequency_penalty=0.5, grammar=grammar)),
        "transcription": ([chat_ids(tok, [{"role": "user", "content": "Copy this text exactly:\n\n" + d}])
                           for d in docs], SamplingParams(temperature=0, max_tokens=300)),
    }
    for engine in engines.values():   # compile the grammar and warm up outside the timing
        engine.generate([workloads["extraction"][0][0]], SamplingParams(temperature=0, max_tokens=4, grammar=grammar))
    results = {"documents": args.documents, "passes": args.passes, "threads": args.threads,
               "draft_tokens": args.draft_tokens, "rows": []}
    print(f"{'workload':14} {'mode':10} {'side':6} {'tokens':>7} {'s (median)':>11} {'tok/s':>7} {'CPU s':>7} "
          f"{'steps':>6} {'accepted/drafted':>17} {'speed-up':>9}")
    for name, (prompts, sp) in workloads.items():
        for together in (False, True):
            runs = {side: [] for side in engines}
            for _ in range(args.passes):
                for side, engine in engines.items():
                    runs[side].append(run_pass(engine, prompts, [sp] * len(prompts), together))
            assert all(r["outputs"] == runs["none"][0]["outputs"] for side in runs for r in runs[side]), \
                f"{name}: drafted output differs from undrafted"
            medians = {side: statistics.median(r["seconds"] for r in rs) for side, rs in runs.items()}
            for side, rs in runs.items():
                last = rs[-1]
                row = {"workload": name, "mode": "batch" if together else "one at a time", "side": side,
                       "tokens": last["tokens"], "seconds_median": medians[side],
                       "seconds": [r["seconds"] for r in rs], "cpu_seconds": [r["cpu_seconds"] for r in rs],
                       "tok_s": last["tokens"] / medians[side], "steps": last["steps"],
                       "drafted": last["drafted"], "accepted": last["accepted"],
                       "speedup": medians["none"] / medians[side]}
                results["rows"].append(row)
                rate = f"{row['accepted']}/{row['drafted']}" if row["drafted"] else "-"
                print(f"{name:14} {row['mode']:10} {side:6} {row['tokens']:>7} {medians[side]:>11.2f} "
                      f"{row['tok_s']:>7.1f} {statistics.median(row['cpu_seconds']):>7.2f} {row['steps']:>6} "
                      f"{rate:>17} {row['speedup']:>8.2f}x", flush=True)
    for engine in engines.values():
        engine.close()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
