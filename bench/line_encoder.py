"""The house model's line encoder on real pipeline crops: the PP-OCRv4 graph as
exported (its CTC classifier still run), cut at the features, and as the engine
builds it (cut, hard-swish fused, scale-and-shift pairs folded), side by side on
one thread; inputs squeezed in width or read at fewer
rows (cheaper, but the shipped decoder then reads them differently); and PNG
encoding of the crops at the zlib levels the recogniser client could use.

    .venv/bin/python bench/line_encoder.py --pages 4

Crops: every detected line of the first `--pages` pages of bench/house_ocr_eval.py,
clean and scan-like, cut by the page pipeline's own stages at the default DPI.
Prints a table, then the figures as one JSON line.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import house_ocr_eval as evaluation  # noqa: E402
from engine.loader import resolve_model  # noqa: E402
from engine.models import line_encoder  # noqa: E402
from training.house_ocr.export import load_exported  # noqa: E402
from training.house_ocr.train import edit_distance  # noqa: E402
from vision.crops import crop_line  # noqa: E402
from vision.document import Document  # noqa: E402
from vision.page_analysis import analyze_page  # noqa: E402
from workers.settings import Settings  # noqa: E402


def pipeline_crops(pages: int, dpi: float) -> list[Image.Image]:
    """Line crops of the evaluation's first pages (clean and scan-like image-only PDFs)."""
    return [crop for page in crops_by_page(pages, dpi) for crop in page]


def crops_by_page(pages: int, dpi: float) -> list[list[Image.Image]]:
    """The same crops, one list per rendered page (each page clean, then scan-like)."""
    rng = random.Random(2026)   # the evaluation's seed: the same pages
    families = evaluation._families()
    typeset = [evaluation.typeset(i, rng, families) for i in range(pages)]
    crops: list[list[Image.Image]] = []
    with tempfile.TemporaryDirectory(prefix="ocrserve-encoder-bench-") as tmp:
        for page in typeset:
            for name, image, jpeg in (("clean", evaluation.rasterise(page.pdf, 300), False),
                                      ("scan", evaluation.scan_like(evaluation.rasterise(page.pdf, 200), rng), True)):
                path = Path(tmp) / f"{page.name}-{name}.pdf"
                evaluation.image_pdf(image, path, jpeg=jpeg)
                with Document.open_path(path) as document:
                    rendered = document.render_page(0, dpi)
                crops.append([crop_line(rendered.image, line).convert("RGB")
                              for block in analyze_page(rendered.image, num_threads=2).blocks
                              for line in block.lines])
    return crops


def session(model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def squeezed(pixels: np.ndarray, factor: float) -> np.ndarray:
    if factor == 1.0:
        return pixels
    width = max(line_encoder.MIN_WIDTH, round(pixels.shape[3] * factor))
    resized = cv2.resize(pixels[0].transpose(1, 2, 0), (width, line_encoder.HEIGHT), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(resized.transpose(2, 0, 1)[None])


def timed(run, inputs) -> float:
    started = time.perf_counter()
    for x in inputs:
        run(x)
    return (time.perf_counter() - started) * 1000 / len(inputs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--decoded", type=int, default=60, help="crops the shipped decoder reads per variant")
    args = parser.parse_args()
    torch.set_num_threads(1)

    crops = pipeline_crops(args.pages, Settings().render_dpi)
    pixels = [line_encoder.preprocess(np.asarray(crop)) for crop in crops]
    data = line_encoder.model_path().read_bytes()
    # "exported": the recogniser with its features named as the output, its classifier still in the
    # graph (onnxruntime runs it anyway); "original": cut at the features; "built": as the engine has it.
    exported = session(line_encoder.truncated_graph(data, fuse=False, drop_unread=False))
    original = session(line_encoder.truncated_graph(data, fuse=False))
    built = session(line_encoder.truncated_graph(data, fuse=True))
    features = {"exported": lambda x: exported.run(None, {"x": x})[0][0],
                "original": lambda x: original.run(None, {"x": x})[0][0],
                "built": lambda x: built.run(None, {"x": x})[0][0]}
    for run in features.values():
        timed(run, pixels[:5])   # warm-up
    # interleaved twice, so drift on a shared machine hits them all
    times = {name: [] for name in features}
    for _ in range(2):
        for name, run in features.items():
            times[name].append(timed(run, pixels))
    difference = max(float(np.abs(features["built"](x) - features["original"](x)).max()
                           / np.abs(features["original"](x)).max()) for x in pixels[:100])

    model = load_exported(resolve_model("house-ocr"))
    model.eval()
    picked = range(0, len(crops), max(1, len(crops) // args.decoded))[: args.decoded]
    # Cheaper inputs: squeezed in width (fewer frames), or fewer rows at the same width (the same
    # frames: the network pools its rows). Each: encoder time over all crops, and how much of the
    # shipped decoder's reading of a sample moves.
    makers = {"width": {factor: lambda i, f=factor: squeezed(pixels[i], f) for factor in (1.0, 0.75, 0.6)},
              "rows": {rows: lambda i, r=rows: line_encoder.preprocess(np.asarray(crops[i]), r) for rows in (40, 32, 24)}}
    with torch.inference_mode():
        reference = [model.greedy(torch.from_numpy(features["built"](pixels[i]))) for i in picked]
        variants: dict[str, dict] = {"width": {}, "rows": {}}
        for kind, by_value in makers.items():
            for value, make in by_value.items():
                variant = [make(i) for i in range(len(crops))]   # one variant's inputs in memory at a time
                ms = timed(features["built"], variant)
                read = [model.greedy(torch.from_numpy(features["built"](variant[i]))) for i in picked]
                moved = sum(edit_distance(a, b) for a, b in zip(read, reference)) / max(1, sum(map(len, reference)))
                variants[kind][value] = {"ms_per_crop": ms, "decoder_output_changed": moved}

    png = {}
    for level in (6, 1):
        started, size = time.perf_counter(), 0
        for crop in crops:
            buffer = io.BytesIO()
            crop.save(buffer, format="PNG", compress_level=level)
            size += buffer.tell()
        png[level] = {"ms_per_crop": (time.perf_counter() - started) * 1000 / len(crops),
                      "kib_per_crop": size / 1024 / len(crops)}

    print(f"{len(crops)} line crops from {args.pages} pages x clean/scan-like at {Settings().render_dpi:g} DPI, "
          f"mean network input width {np.mean([x.shape[3] for x in pixels]):.0f} px, one thread")
    print(f"{'encoder graph':<34} {'ms/crop (two runs)':>20}")
    for name, label in (("exported", "exported graph, classifier left in"),
                        ("original", "original graph, cut at features"), ("built", "as the engine builds it")):
        print(f"{label:<34} {times[name][0]:>9.2f} {times[name][1]:>9.2f}")
    speedup = min(times["original"]) / min(times["built"])
    print(f"cutting the classifier {min(times['exported']) / min(times['original']):.2f}x; built against cut "
          f"{speedup:.2f}x; largest feature difference {difference:.1e} of the features' range")
    for kind, label in (("width", "input width (48 rows)"), ("rows", "input rows (full width)")):
        print(f"{label:<34} {'ms/crop':>9} {'decoder output changed':>24}")
        for value, figures in variants[kind].items():
            print(f"{value:<34g} {figures['ms_per_crop']:>9.2f} {figures['decoder_output_changed']:>24.1%}")
    print(f"{'PNG zlib level':<34} {'ms/crop':>9} {'KiB/crop':>10}")
    for level, value in png.items():
        print(f"{level:<34} {value['ms_per_crop']:>9.2f} {value['kib_per_crop']:>10.1f}")
    print(json.dumps({"crops": len(crops), "encoder_ms": times, "speedup": speedup, "feature_difference": difference,
                      "width_variants": variants["width"], "row_variants": variants["rows"], "png": png}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
