"""Would batching the house model's line encoder pay? CPU per crop of the PP-OCRv4 encoder (as the
engine builds it) run on one crop at a time, as the engine does, against padded batches of crops
of similar width (sorted by width, each batch padded to its widest crop rounded up to 8 px), by
width class, on one and two threads; and how far right-padding moves a crop's features.

    .venv/bin/python bench/line_encoder_batching.py --pages 4

Crops: every detected line of the first `--pages` pages of bench/house_ocr_eval.py (clean and
scan-like, cut by the page pipeline at the default DPI), the same crops as bench/line_encoder.py
and bench/recognition_cost.py. Each configuration runs `--runs` times, interleaved with the
others. Padding: the network input is padded on the right with zeros (the value of its own
convolutions' padding) and the features of the crop's own frames compared with those of the
crop alone, relative to the largest feature magnitude; the recogniser's neck attends over all
frames, so padding reaches frames far from the edge too. Prints a table, then one JSON line.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from line_encoder import crops_by_page  # noqa: E402

from engine.models import line_encoder  # noqa: E402
from workers.settings import Settings  # noqa: E402

CLASSES = (("<= 256 px", 0, 256), ("257-1200 px", 257, 1200), ("> 1200 px", 1201, 10 ** 6))
BATCH_SIZES = (4, 16)
PADS = (8, 32, 128)


def padded_batches(inputs: list[np.ndarray], size: int) -> list[np.ndarray]:
    """Inputs sorted by width, `size` at a time, each batch as wide as its widest input (rounded up to 8)."""
    ordered = sorted(inputs, key=lambda x: x.shape[3])
    batches = []
    for start in range(0, len(ordered), size):
        group = ordered[start:start + size]
        width = -(-max(x.shape[3] for x in group) // 8) * 8
        batch = np.zeros((len(group), 3, line_encoder.HEIGHT, width), np.float32)
        for row, x in enumerate(group):
            batch[row, :, :, :x.shape[3]] = x[0]
        batches.append(batch)
    return batches


def cpu_ms_per_crop(session, batches: list[np.ndarray], num_crops: int) -> float:
    started = time.process_time()
    for batch in batches:
        session.run([line_encoder._FEATURE_OUTPUT], {"x": batch})
    return (time.process_time() - started) * 1000 / num_crops


def padding_effect(encoder: line_encoder.LineEncoder, inputs: list[np.ndarray]) -> dict:
    effect = {}
    for pad in PADS:
        whole, inner = [], []
        for x in inputs:
            alone = encoder.run(x)
            wider = np.zeros((1, 3, line_encoder.HEIGHT, x.shape[3] + pad), np.float32)
            wider[..., :x.shape[3]] = x
            moved = np.abs(encoder.run(wider)[:alone.shape[0]] - alone).max(axis=1) / np.abs(alone).max()
            whole.append(float(moved.max()))
            inner.append(float(moved[:max(1, len(moved) - 8)].max()))
        effect[pad] = {"median": float(np.median(whole)), "max": float(np.max(whole)),
                       "median_away_from_edge": float(np.median(inner))}
    return effect


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()

    crops = [crop for page in crops_by_page(args.pages, Settings().render_dpi) for crop in page]
    inputs = [line_encoder.preprocess(np.asarray(crop.convert("RGB"))) for crop in crops]
    widths = np.array([x.shape[3] for x in inputs])
    print(f"{len(inputs)} crops; network input width percentiles 10/50/90: "
          f"{' / '.join(str(int(w)) for w in np.percentile(widths, [10, 50, 90]))} px")
    results: dict = {"crops": len(inputs), "classes": {}}
    print(f"{'threads':>7} {'width':<12} {'crops':>5} {'one at a time':>14} "
          + " ".join(f"{f'batches of {n}':>14}" for n in BATCH_SIZES) + "   (CPU ms per crop)")
    for threads in (1, 2):
        session = line_encoder.LineEncoder(threads)._session
        for label, low, high in CLASSES:
            chosen = [x for x in inputs if low <= x.shape[3] <= high]
            configs = {"single": chosen, **{f"batch{n}": padded_batches(chosen, n) for n in BATCH_SIZES}}
            cpu_ms_per_crop(session, configs["single"][:4], 4)   # warm-up
            figures: dict[str, list[float]] = {name: [] for name in configs}
            for _ in range(args.runs):
                for name, batches in configs.items():
                    figures[name].append(cpu_ms_per_crop(session, batches, len(chosen)))
            pixels = {name: sum(b.shape[0] * b.shape[3] for b in batches) / sum(x.shape[3] for x in chosen)
                      for name, batches in configs.items()}
            results["classes"][f"{threads} threads {label}"] = {"crops": len(chosen), "cpu_ms_per_crop": figures,
                                                                "padded_pixels": pixels}
            cells = [f"{min(figures['single']):14.2f}"] + [
                f"{min(figures[f'batch{n}']):8.2f} {min(figures[f'batch{n}']) / min(figures['single']):4.2f}x"
                for n in BATCH_SIZES]
            print(f"{threads:>7} {label:<12} {len(chosen):>5} " + " ".join(cells))
    effect = padding_effect(line_encoder.LineEncoder(1), inputs[::10])
    results["padding"] = effect
    for pad, moved in effect.items():
        print(f"padded by {pad:>3} px: features moved by {moved['median']:.3f} of their range (median crop; "
              f"largest {moved['max']:.3f}), {moved['median_away_from_edge']:.3f} more than 8 frames from the edge")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
