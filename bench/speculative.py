"""Speculative decoding against none, the same requests on engines that differ only in their
drafter, one run, side by side. fp32 on this CPU. Prints a table, writes JSON.

    .venv/bin/python bench/speculative.py --threads 2 --out artifacts/speculative.json

Workloads (generated documents and lines; the models and the prompts are the product's):
- extraction (`ngram`, with the grammar's forced text): SmolLM2-135M-Instruct on the text
  route's messages (`workers.extraction_prompt.text_messages`: system prompt, the document
  between fences, a JSON template) for invoice-like documents, the schema as a grammar, greedy,
  `frequency_penalty` 0.5 as the text route sends it;
- transcription (`ngram`): "Copy this text exactly" over the same documents, free greedy;
- lines (`ctc`, `text_layer`): house-ocr reading the documents' lines, rendered as crops (DejaVu
  fonts, some blurred like a scan), as the recogniser sends them; its CTC draft verified (the
  default, 32 tokens) against none (`speculative_tokens=0`), and each line's true text sent as
  the draft (`draft_text`, what `text_layer="verify"` sends for a born-digital page), CTC
  rescoring on every side as served.
Each workload runs at concurrency 1 (requests one after another: latency) and all at once
(batch). Passes alternate sides, the prefix cache flushed before each; the figure quoted is
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
from PIL import Image, ImageDraw, ImageFilter, ImageFont  # noqa: E402

from engine.config import EngineConfig  # noqa: E402
from engine.engine import Engine  # noqa: E402
from engine.grammar import GrammarSpec  # noqa: E402
from engine.metrics import SPEC_METHODS, EngineMetrics  # noqa: E402
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


FONTS = "/usr/share/fonts/truetype/dejavu/"


def line_crops(docs: list[str]) -> tuple[list[bytes], list[str]]:
    """Each non-empty line of the documents as a PNG crop (four fonts and sizes in turn, every
    third crop blurred like a scan), and its text."""
    import io

    styles = [("DejaVuSans.ttf", 22), ("DejaVuSerif.ttf", 18), ("DejaVuSansMono.ttf", 16), ("DejaVuSans.ttf", 28)]
    crops, texts = [], []
    for i, text in enumerate(line for doc in docs for line in doc.splitlines() if line.strip()):
        name, size = styles[i % len(styles)]
        font = ImageFont.truetype(FONTS + name, size)
        left, top, right, bottom = font.getbbox(text)
        pad = max(4, size // 3)
        image = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), "white")
        ImageDraw.Draw(image).text((pad - left, pad - top), text, font=font, fill="black")
        if i % 3 == 2:
            image = image.filter(ImageFilter.GaussianBlur(0.7))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        crops.append(buffer.getvalue())
        texts.append(text)
    return crops, texts


def chat_ids(tok, messages) -> list[int]:
    out = tok.apply_chat_template(messages, add_generation_prompt=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def verifications(engine: Engine) -> tuple[float, float]:
    """(verification steps, drafted tokens they kept) so far: the acceptance-length histogram's
    count and sum over every drafting method."""
    get = engine.metrics.registry.get_sample_value
    return (sum(get("ocrserve_spec_acceptance_length_count", {"method": m}) or 0 for m in SPEC_METHODS),
            sum(get("ocrserve_spec_acceptance_length_sum", {"method": m}) or 0 for m in SPEC_METHODS))


def start_engine(**settings) -> Engine:
    return Engine(EngineConfig(**settings), metrics=EngineMetrics())


def run_pass(engine: Engine, prompts, params, together: bool, images=None) -> dict:
    engine.flush_cache()
    images = images or [None] * len(prompts)
    drafted, accepted, steps = engine.num_draft_tokens, engine.num_accepted_draft_tokens, engine.num_steps
    checks = verifications(engine)
    start, cpu_start = time.perf_counter(), time.process_time()
    outputs = []
    if together:
        ids = [engine.add_request(p, sp, images=im).request_id for p, sp, im in zip(prompts, params, images)]
        done = {}
        while engine.has_work:
            for out in engine.step():
                if out.finished:
                    done[out.request_id] = out
        outputs = [done[i] for i in ids]
    else:
        for p, sp, im in zip(prompts, params, images):
            outputs += engine.generate([p], sp, images=[im])
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    count, kept = (after - before for after, before in zip(verifications(engine), checks))
    tokens = sum(o.num_output_tokens for o in outputs)
    return {"seconds": seconds, "cpu_seconds": cpu, "tokens": tokens, "tok_s": tokens / seconds,
            "steps": engine.num_steps - steps, "drafted": engine.num_draft_tokens - drafted,
            "accepted": engine.num_accepted_draft_tokens - accepted,
            # tokens a verification step gives: the drafted ones kept and the model's own next one
            "acceptance_length": 1 + kept / count if count else None,
            "outputs": [o.token_ids for o in outputs]}


def measure(name: str, sides: dict[str, tuple[Engine, list[SamplingParams]]], prompts, images, passes: int,
            results: dict) -> None:
    """Each side: an engine and the requests' parameters (a side may differ from another in its
    engine's drafter or in what its requests carry, a text layer's draft)."""
    for together in (False, True):
        runs = {side: [] for side in sides}
        for _ in range(passes):
            for side, (engine, params) in sides.items():
                runs[side].append(run_pass(engine, prompts, params, together, images))
        base = next(iter(runs))
        if not all(r["outputs"] == runs[base][0]["outputs"] for side in runs for r in runs[side]):   # under -O too
            raise RuntimeError(f"{name}: drafted output differs from undrafted")
        medians = {side: statistics.median(r["seconds"] for r in rs) for side, rs in runs.items()}
        for side, rs in runs.items():
            last = rs[-1]
            row = {"workload": name, "mode": f"{len(prompts)} at once" if together else "one at a time",
                   "side": side, "requests": len(prompts), "tokens": last["tokens"],
                   "seconds_median": medians[side], "seconds": [r["seconds"] for r in rs],
                   "cpu_seconds": [r["cpu_seconds"] for r in rs], "tok_s": last["tokens"] / medians[side],
                   "ms_per_request": 1000 * medians[side] / len(prompts), "steps": last["steps"],
                   "drafted": last["drafted"], "accepted": last["accepted"],
                   "acceptance_length": last["acceptance_length"],
                   "speedup": medians[base] / medians[side]}
            results["rows"].append(row)
            rate = f"{row['accepted']}/{row['drafted']}" if row["drafted"] else "-"
            length = f"{row['acceptance_length']:.2f}" if row["acceptance_length"] else "-"
            print(f"{name:14} {row['mode']:14} {side:10} {row['tokens']:>7} {medians[side]:>8.2f} "
                  f"{row['tok_s']:>7.1f} {row['ms_per_request']:>8.0f} {row['steps']:>6} {rate:>11} {length:>7} "
                  f"{row['speedup']:>8.2f}x", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=8, help="also the batch size")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft-tokens", type=int, default=4)
    parser.add_argument("--lines", type=int, default=48, help="house-ocr line crops (0: skip the workload)")
    parser.add_argument("--workloads", default="extraction,transcription,lines",
                        help="comma-separated: extraction, transcription, lines")
    parser.add_argument("--out", default="artifacts/speculative.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    docs = [document(i) for i in range(args.documents)]
    results = {"documents": args.documents, "passes": args.passes, "threads": args.threads,
               "draft_tokens": args.draft_tokens, "lines": args.lines, "rows": []}
    print(f"{'workload':14} {'mode':14} {'side':10} {'tokens':>7} {'s (med)':>8} {'tok/s':>7} {'ms/req':>8} "
          f"{'steps':>6} {'acc/drafted':>11} {'acc.len':>7} {'speed-up':>9}")

    common = dict(model="smollm2-135m", context_length=2048, kv_tokens=32768, num_threads=args.threads)
    engines = {"none": start_engine(**common, speculative_algorithm="none"),
               "ngram": start_engine(**common, speculative_algorithm="ngram", draft_tokens=args.draft_tokens)}
    tok = engines["none"].tokenizer
    grammar = GrammarSpec(json_schema=json.dumps(SCHEMA))
    workloads = {
        "extraction": ([chat_ids(tok, text_messages(d, SCHEMA)) for d in docs],
                       SamplingParams(temperature=0, max_tokens=300, frequency_penalty=0.5, grammar=grammar)),
        "transcription": ([chat_ids(tok, [{"role": "user", "content": "Copy this text exactly:\n\n" + d}])
                           for d in docs], SamplingParams(temperature=0, max_tokens=300)),
    }
    for engine in engines.values():   # compile the grammar and warm up outside the timing
        engine.generate([workloads["extraction"][0][0]], SamplingParams(temperature=0, max_tokens=4, grammar=grammar))
    chosen = set(args.workloads.split(","))
    for name, (prompts, sp) in workloads.items():
        if name not in chosen:
            continue
        measure(name, {side: (engine, [sp] * len(prompts)) for side, engine in engines.items()}, prompts, None,
                args.passes, results)
    for engine in engines.values():
        engine.close()

    if args.lines and "lines" in chosen:
        common = dict(model="house-ocr", kv_tokens=16384, num_threads=args.threads)
        engines = {"none": start_engine(**common, speculative_tokens=0), "ctc": start_engine(**common)}
        crops, truths = line_crops([document(i) for i in range(max(args.documents, 12))])
        crops, truths = crops[:args.lines], truths[:args.lines]
        text = engines["none"].tokenizer.apply_chat_template(
            [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Text Recognition:"}]}],
            add_generation_prompt=True, tokenize=False)
        for engine in engines.values():   # every crop's encoder features cached, outside the timing
            engine.generate([text] * len(crops), SamplingParams(temperature=0, max_tokens=1),
                            images=[[c] for c in crops])
        plain = [SamplingParams(temperature=0, max_tokens=256)] * len(crops)
        # born-digital lines: the text layer holds each line's text, sent as the draft as the pipeline
        # sends it (`verify`: the layer's words joined by single spaces)
        layer = [SamplingParams(temperature=0, max_tokens=256, draft_text=" ".join(t.split())) for t in truths]
        measure("lines", {"none": (engines["none"], plain), "ctc": (engines["ctc"], plain),
                          "text_layer": (engines["ctc"], layer)}, [text] * len(crops), [[c] for c in crops],
                args.passes, results)
        for engine in engines.values():
            engine.close()

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
