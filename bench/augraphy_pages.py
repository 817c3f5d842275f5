"""Pages degraded by augraphy's default pipeline, for bench/real_pages.py's `augraphy` split.

Runs in augraphy's own environment (`bench/real_pages.py --install` makes artifacts/augraphy-venv),
so the product's environment never carries augraphy or its dependencies. Reads a JSON list of
{"pdf", "page" (1-based), "name"} on standard input; renders each page at `--dpi`, applies
`augraphy.default_augraphy_pipeline()` seeded by the page's name (the same damage in every
run), and writes OUT/NAME.jpg at that DPI.

augraphy keeps the last 30 images it was given in `augraphy_cache/` under its working directory,
and its bleed-through, book-binding and page-border effects paint a random one of them into the
page: another document's page. Read that way, the algorithm2e title page's copy showed the elstest
title page beside it (Tesseract's reading held 80% of elstest's words and 22% of its own), and an
image's damage depended on which pages had run before it. So the cache is emptied before each
page: the pipeline puts the page itself there first, and what shows through is the page's own print.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
import time
from pathlib import Path

import cv2
import matplotlib.font_manager  # noqa: F401  augraphy's scribbles use it without importing it
import numpy as np
import pymupdf
from PIL import Image
from augraphy import default_augraphy_pipeline


CACHE = Path("augraphy_cache")   # augraphy's, in its working directory


def degrade(pdf: str, number: int, dpi: int, seed: str) -> np.ndarray:
    shutil.rmtree(CACHE, ignore_errors=True)   # no other page's print in this one (docstring)
    with pymupdf.open(pdf) as document:
        pix = document[number - 1].get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False)
        page = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "little")
    random.seed(value)
    np.random.seed(value)
    bgr = cv2.cvtColor(page, cv2.COLOR_RGB2BGR)
    damaged = default_augraphy_pipeline()(bgr)
    if damaged.ndim == 2:
        damaged = cv2.cvtColor(damaged, cv2.COLOR_GRAY2BGR)
    return damaged[:, :, :3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for job in json.load(sys.stdin):
        started = time.perf_counter()
        damaged = degrade(job["pdf"], job["page"], args.dpi, f"{args.seed}/{job['name']}")
        target = args.out / f"{job['name']}.jpg"
        rgb = cv2.cvtColor(np.ascontiguousarray(damaged), cv2.COLOR_BGR2RGB)
        Image.fromarray(rgb).save(target, quality=90, dpi=(args.dpi, args.dpi))
        print(f"augraphy: {job['name']} {damaged.shape[1]}x{damaged.shape[0]} in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
