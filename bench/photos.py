"""Photos of pages against the same pages scanned flat: word recall of `ocrserve run`
(house model, `--formats txt,json --keep-furniture`, text layer never) on each, and
Tesseract on the photo for reference.

Pages: the first listed page of the first `--per-split` documents of each split of the
real-page set (bench/real_pages.json, bench/held_out_2026-12-06.json), with the truth and
images bench/real_pages.py builds (run it first: its `truth/`, `scan/` and `clean300/`).
- flat: the page's 150-DPI scan-like JPEG (real_pages' `scan` variant, as it is);
- photo: the page's 300-DPI render scaled to 150 DPI (the flat scan's), photographed by
  tests/vision/photo_samples.py `make_photo` (curl of 2% of the height, a desk larger than
  the page, a homography moving each corner up to 8% of the page, a light falloff and a
  shadow band, a turn by 0/90/180/270 degrees chosen from the page's name, blur, grain,
  JPEG 85), seeded by the page's name: the same photo every run.
The JSON results say, per page, the correction ocrserve applied (`geometry`).

    nice -n 10 .venv/bin/python bench/photos.py --per-split 5   # 10 pages: the machine is loaded
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "vision"))   # the photo maker the tests use
from photo_samples import make_photo  # noqa: E402
from real_pages import BEST_DPI, load_pages, run_ocrserve, run_tesseract  # noqa: E402  bench/ is on sys.path
from real_pages_metrics import median, page_scores  # noqa: E402

PHOTO_DPI = 150     # the page's resolution inside the photo before the perspective: the flat scan's


def build(pages, real: Path, work: Path) -> list:
    """The flat and photo inputs of every page whose images real_pages.py has built."""
    for folder in ("flat", "photo"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    built = []
    for page in pages:
        scan, render = real / "scan" / f"{page.name}.jpg", real / "clean300" / f"{page.name}.png"
        if not (scan.exists() and render.exists() and (real / "truth" / f"{page.name}.txt").exists()):
            print(f"skipping {page.name}: run bench/real_pages.py first", flush=True)
            continue
        (work / "flat" / f"{page.name}.jpg").write_bytes(scan.read_bytes())
        photo_path = work / "photo" / f"{page.name}.jpg"
        if not photo_path.exists():
            with Image.open(render) as image:
                scale = PHOTO_DPI / BEST_DPI
                pixels = np.asarray(image.convert("RGB").resize(
                    (round(image.width * scale), round(image.height * scale)), Image.Resampling.LANCZOS))
            rotation = random.Random(page.name).choice((0, 90, 180, 270))
            photo_path.write_bytes(make_photo(pixels, page.name, rotation=rotation).jpeg)
        built.append(page)
    return built


def geometry(out: Path, name: str) -> dict | None:
    path = out / f"{name}.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["documents"][0]["pages"][0].get("geometry")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=Path, default=ROOT / "artifacts" / "real_pages", help="real_pages.py's work dir")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "photos")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "photos.json")
    parser.add_argument("--per-split", type=int, default=6, help="documents per split (one page each)")
    parser.add_argument("--worst", type=int, default=5)
    parser.add_argument("--keep", default="", help="comma-separated variants (flat, photo) whose outputs are reused")
    args = parser.parse_args()
    args.keep = set(filter(None, args.keep.split(",")))
    pages = []
    for split in ("dev", "held_out"):
        found, _ = load_pages(split, set(), 1)
        pages += found[:args.per_split]
    pages = build(pages, args.real, args.work)
    runs = {}
    for variant in ("flat", "photo"):
        out = args.work / f"out_{variant}"
        out.mkdir(exist_ok=True)
        if variant in args.keep and all((out / f"{p.name}.json").exists() for p in pages):
            continue
        print(f"ocrserve on {len(pages)} {variant} pages ...", flush=True)
        runs[f"ocrserve_{variant}"] = run_ocrserve([args.work / variant / f"{p.name}.jpg" for p in pages], out)
    tesseract_out = args.work / "out_tesseract_photo"
    tesseract_out.mkdir(exist_ok=True)
    runs["tesseract_photo"] = run_tesseract([args.work / "photo" / f"{p.name}.jpg" for p in pages], tesseract_out)

    rows = []
    for page in pages:
        truth = (args.real / "truth" / f"{page.name}.txt").read_text()
        row = {"page": page.name, "split": page.split}
        for system, out in (("flat", args.work / "out_flat"), ("photo", args.work / "out_photo"),
                            ("tesseract_photo", tesseract_out)):
            text_file = out / f"{page.name}.txt"
            row[system] = page_scores(text_file.read_text() if text_file.exists() else "", truth)["recall"]
        row["gap"] = row["flat"] - row["photo"]
        row["geometry"] = geometry(args.work / "out_photo", page.name)
        rows.append(row)

    summary = {}
    print(f"\n{'split':10} {'pages':>5} {'flat':>7} {'photo':>7} {'gap':>7} {'tess photo':>10}")
    for split in ("dev", "held_out", "all"):
        chosen = [row for row in rows if split == "all" or row["split"] == split]
        summary[split] = {key: median(row[key] for row in chosen) for key in ("flat", "photo", "gap", "tesseract_photo")}
        summary[split]["pages"] = len(chosen)
        s = summary[split]
        if chosen:
            print(f"{split:10} {len(chosen):5} {s['flat']:7.3f} {s['photo']:7.3f} {s['gap']:7.3f} {s['tesseract_photo']:10.3f}")
    print("\nworst gaps (flat - photo recall):")
    for row in sorted(rows, key=lambda r: r["gap"], reverse=True)[:args.worst]:
        turn = row["geometry"]["rotation"] if row["geometry"] else "not straightened"
        print(f"  {row['page']:40} flat {row['flat']:.3f} photo {row['photo']:.3f} gap {row['gap']:+.3f} turn {turn}")
    args.out.write_text(json.dumps({"summary": summary, "runs": runs, "pages": rows}, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
