"""The line detector at lower input resolutions against the one the pipeline runs: CPU per page
and the lines each loses (issue 31's "detection at lower resolution").

The pipeline runs the PP-OCRv4 detector on the 200-DPI render with its long side capped at 2048
pixels (`vision.lines.LineDetector`); its cost grows with the pixels. Each page here is
detected at that setting (the reference) and with the long side capped lower. A reference line
counts as lost when the lower-resolution lines cover less than half of its box. CPU is this
process's, one page at a time, two onnxruntime threads, after one untimed run per setting (the
memory arena's first allocation). Lone glyphs (`vision.lines.lone_glyphs`) are off on every
side unless `--lone-glyphs` (then on for every side, the reference too).

    .venv/bin/python bench/line_detect_scale.py --sides 2048,1400,1100,900 [--lone-glyphs] [--pages NAME ...]
        [--out artifacts/line_detect_scale.json]

Pages are one-page PDFs of `bench/real_pages.py`'s work directory (`--keep` leaves them there);
the default list is dev pages only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pymupdf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vision.lines import LineDetector  # noqa: E402

PDF_DIR = ROOT / "artifacts" / "real_pages" / "pdf"
DEV_PAGES = ["R-intro_p0001", "algorithm2e_p0001", "amsldoc_p0002", "elstest-5p_p0001", "fntguide_p0001",
             "memman_p0010", "octave_p0003", "sample-sigconf_p0001", "IEEEconf_p0002", "gb4e-doc_p0003",
             "gnuplot_p0001", "refcard-a4_p0002", "asymptote_p0020", "octave_p0018"]
DPI = 200


def _overlap(a, b) -> float:
    return max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))


def _area(box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _render(name: str) -> np.ndarray:
    pixmap = pymupdf.open(PDF_DIR / f"{name}.pdf")[0].get_pixmap(dpi=DPI)
    return np.frombuffer(pixmap.samples, np.uint8).reshape(pixmap.height, pixmap.width, pixmap.n)[:, :, :3].copy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sides", default="2048,1400,1100,900", help="long-side caps; the first is the reference")
    parser.add_argument("--pages", nargs="*", default=DEV_PAGES)
    parser.add_argument("--lone-glyphs", action="store_true", help="recover lone glyphs at every setting")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "line_detect_scale.json")
    args = parser.parse_args()
    sides = [int(side) for side in args.sides.split(",")]
    detectors = {side: LineDetector(2, max_side_len=side, lone_glyphs=args.lone_glyphs) for side in sides}
    rows = []
    for name in args.pages:
        image = _render(name)
        row: dict = {"page": name, "shape": list(image.shape[:2])}
        reference = None
        for side in sides:
            detectors[side].detect(image)   # untimed: the arena's first allocation for this shape
            started = time.process_time()
            boxes = [line.bbox for line in detectors[side].detect(image)]
            cpu = time.process_time() - started
            if reference is None:
                reference = boxes
            lost = [box for box in reference if sum(_overlap(box, other) for other in boxes) < 0.5 * _area(box)]
            row[str(side)] = {"cpu_s": round(cpu, 3), "lines": len(boxes), "lost": len(lost), "lost_boxes": lost}
        rows.append(row)
        print(f"{name:24s} " + "  ".join(f"{side}: {row[str(side)]['cpu_s']:.2f} s, {row[str(side)]['lines']} lines, "
                                         f"{row[str(side)]['lost']} lost" for side in sides), flush=True)
    summary = {str(side): {"cpu_s": round(sum(r[str(side)]["cpu_s"] for r in rows), 2),
                           "lines": sum(r[str(side)]["lines"] for r in rows),
                           "lost": sum(r[str(side)]["lost"] for r in rows),
                           "pages_losing": [r["page"] for r in rows if r[str(side)]["lost"]]} for side in sides}
    print(f"\n{'long side':>9} {'CPU s':>7} {'x ref':>6} {'lines':>6} {'lost':>5}  pages losing lines")
    base = summary[str(sides[0])]["cpu_s"]
    for side in sides:
        s = summary[str(side)]
        print(f"{side:>9} {s['cpu_s']:>7.2f} {s['cpu_s'] / max(base, 1e-9):>6.2f} {s['lines']:>6} {s['lost']:>5}  "
              f"{' '.join(s['pages_losing']) or '-'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"dpi": DPI, "sides": sides, "lone_glyphs": args.lone_glyphs, "pages": rows, "summary": summary}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
