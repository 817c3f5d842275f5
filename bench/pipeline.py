"""Document pipeline throughput: pages per second and seconds per stage
(render, layout, lines, recognition, assembly) on a folder of generated pages,
in-process (the code a page task runs, without Celery). Prints a table and
writes JSON.

    .venv/bin/python bench/pipeline.py --pages 12 --recognizer tesseract --out artifacts/pipeline.json
    .venv/bin/python bench/pipeline.py --input DIR --recognizer openai --engine-url http://127.0.0.1:30000/v1 \
        --engine-model glm-ocr

The generated pages mix layouts: one column of paragraphs, two columns under a
title, and a page with a table-like grid, all with a text layer (so the JSON
also reports how much of the text-layer wording the recogniser reproduced).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402

from vision.document import Document  # noqa: E402
from workers.page_pipeline import PagePipeline  # noqa: E402
from workers.recognizers.registry import build_recognizer  # noqa: E402
from workers.settings import Settings  # noqa: E402

STAGES = ("render", "layout", "lines", "order", "recognition", "assembly")
SENTENCE = ("Document pipelines read scanned pages and turn them into structured text that people can search. "
            "Each region is cropped, recognised and put back in reading order. ")


def generate_pages(folder: Path, num_pages: int) -> list[Path]:
    paths = []
    for page_no in range(num_pages):
        doc = pymupdf.open()
        page = doc.new_page(width=595, height=842)
        kind = page_no % 3
        page.insert_text((72, 80), f"Benchmark page {page_no + 1}", fontname="hebo", fontsize=20)
        if kind == 0:
            for i in range(4):
                page.insert_textbox(pymupdf.Rect(72, 120 + 150 * i, 523, 250 + 150 * i), SENTENCE * 3,
                                    fontname="helv", fontsize=11)
        elif kind == 1:
            for x in (60, 315):
                for i in range(3):
                    page.insert_textbox(pymupdf.Rect(x, 120 + 220 * i, x + 220, 320 + 220 * i), SENTENCE * 3,
                                        fontname="tiro", fontsize=11)
        else:
            for row in range(12):
                for col, x in enumerate((72, 222, 372)):
                    page.insert_text((x, 140 + 28 * row), f"Item {row}-{col}: {(row + 1) * (col + 3)} units",
                                     fontname="helv", fontsize=11)
        path = folder / f"page-{page_no + 1:03d}.pdf"
        doc.save(path)
        paths.append(path)
    return paths


def word_recall(recognised: str, reference: str) -> float:
    """Share of the text layer's words that appear in the recognised text (a rough quality check)."""
    found = set(recognised.lower().split())
    words = reference.lower().split()
    return sum(word in found for word in words) / max(1, len(words))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, help="folder of PDFs (default: generate --pages pages)")
    parser.add_argument("--pages", type=int, default=9)
    parser.add_argument("--dpi", type=float, default=200.0)
    parser.add_argument("--recognizer", choices=("house", "tesseract", "openai"), default="tesseract")
    parser.add_argument("--engine-url", default=None)
    parser.add_argument("--engine-model", default="smollm2-135m")
    parser.add_argument("--threads", type=int, default=2, help="ONNX threads for layout and lines")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()

    settings = Settings(recognizer=args.recognizer, engine_url=args.engine_url, engine_model=args.engine_model,
                        vision_num_threads=args.threads, render_dpi=args.dpi)
    engine = None
    if settings.starts_own_engine:   # our engine on loopback, as `ocrserve run` starts it
        from app.local_services import child_env, start_engine

        engine, url = start_engine(settings, child_env(settings), 0,
                                   extra_args=("--num-threads", str(args.threads)))
        settings = settings.model_copy(update={"engine_url": url})
    try:
        return _bench(args, settings)
    finally:
        if engine is not None:
            engine.stop()


def _bench(args: argparse.Namespace, settings: Settings) -> int:
    recognizer = build_recognizer(settings)
    recognizer.check()
    pipeline = PagePipeline(recognizer, args.threads)

    with tempfile.TemporaryDirectory(prefix="ocrserve-bench-") as tmp:
        paths = sorted(args.input.glob("*.pdf")) if args.input else generate_pages(Path(tmp), args.pages)
        # Warm-up: the first page loads the ONNX models; it is not counted.
        with Document.open_path(paths[0]) as document:
            pipeline.process(document, document.render_page(0, args.dpi), 0)
        per_page, recalls, num_regions = [], [], 0
        started = time.perf_counter()
        for path in paths:
            with Document.open_path(path) as document:
                for page_index in range(document.num_pages):
                    result = pipeline.process(document, document.render_page(page_index, args.dpi), 0)
                    per_page.append(result.timings)
                    num_regions += len(result.regions)
                    text = " ".join(region.text for region in result.regions)
                    recalls.append(word_recall(text, " ".join(w.text for w in document.text_words(page_index, 72))))
        wall_s = time.perf_counter() - started

    num_pages = len(per_page)
    stage_means = {stage: statistics.fmean(t.get(stage, 0.0) for t in per_page) for stage in STAGES}
    figures = {
        "recognizer": args.recognizer, "dpi": args.dpi, "threads": args.threads, "num_pages": num_pages,
        "num_regions": num_regions, "wall_s": round(wall_s, 3), "pages_per_s": round(num_pages / wall_s, 4),
        "stage_mean_s": {stage: round(s, 4) for stage, s in stage_means.items()},
        "text_layer_word_recall": round(statistics.fmean(recalls), 4),
    }
    print(f"{num_pages} pages, {num_regions} regions, {args.recognizer}, {args.dpi:g} DPI, {args.threads} threads")
    print(f"{'stage':<12} {'mean s/page':>12} {'share':>7}")
    total = sum(stage_means.values())
    for stage, seconds in stage_means.items():
        print(f"{stage:<12} {seconds:>12.3f} {seconds / total:>7.1%}")
    print(f"{'total':<12} {total:>12.3f}")
    print(f"pages/s: {figures['pages_per_s']:.3f}   text-layer word recall: {figures['text_layer_word_recall']:.1%}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
