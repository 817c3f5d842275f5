"""Handwriting regions: how well the pipeline finds them (vision.handwriting), on pages it never
trained on.

    .venv/bin/python bench/handwriting.py --pages 60 --out artifacts/handwriting_bench.json

Pages are made here: one to three printed paragraphs in the house model's held-out print fonts
and zero to two handwritten notes in the classifier's held-out handwriting families
(`training.handwriting.data.HELD_OUT_HANDS`: Breip, Humor Sans, Ecolier, Joscelyn, Because We
Had To), laid out at random, rendered at 150 DPI, half of them aged like scans. Each page goes
through the real layout model and line detector (`vision.page_analysis`), then the classifier on
each text region's lines, as the pipeline's handwriting stage runs it. A detected region is
handwriting in truth when most of its area lies in a note's box. Scored per region: precision
and recall of the handwriting mark, and how many printed regions were marked (the cost of a
false mark is a printed paragraph flagged as unreliable).

Real print: with `--printed DIR`, every PNG/JPEG page in DIR (e.g. artifacts/real_pages/clean and
scan, the real-page set's renders, made by bench/real_pages.py) is run the same way and every
region marked is a false mark, since those documents are typeset.

Real handwriting: no package in the registries we can reach ships pages of real handwriting
with a licence to use; scikit-learn's digits (1,797 real handwritten digits, 8x8 pixels, UCI)
are too small to make lines of, so the figures here are for handwriting fonts only.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
from faker import Faker
from PIL import Image, ImageDraw, ImageFont

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from training.handwriting.data import HELD_OUT_HANDS, hand_fonts   # noqa: E402
from training.house_ocr.fonts import held_out_fonts                 # noqa: E402
from training.house_ocr.render import age                           # noqa: E402
from vision.handwriting import is_handwriting, line_scores, sampled  # noqa: E402
from vision.page_analysis import analyze_page                        # noqa: E402
from vision.layout import RecognitionTask                            # noqa: E402

WIDTH, HEIGHT = 1275, 1650   # a letter page at 150 DPI


def _wrap(draw: ImageDraw.ImageDraw, text: str, font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if draw.textlength(trial, font=font) > width and line:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


def make_page(rng: random.Random, fake: Faker) -> tuple[Image.Image, list[tuple[float, float, float, float]]]:
    """A page and the boxes of its handwritten notes."""
    page = Image.new("L", (WIDTH, HEIGHT), 255)
    draw = ImageDraw.Draw(page)
    prints, hands = held_out_fonts(), hand_fonts(HELD_OUT_HANDS)
    y, notes = rng.randint(100, 200), []
    parts = ["print"] * rng.randint(1, 3) + ["hand"] * rng.randint(0, 2)
    rng.shuffle(parts)
    for part in parts:
        if y > HEIGHT - 250:
            break
        hand = part == "hand"
        font_path = rng.choice(hands if hand else prints).path
        size = rng.randint(30, 44) if hand else rng.randint(22, 30)
        font = ImageFont.truetype(font_path, size)
        x0 = rng.randint(120, 260) if hand else 150
        text = fake.paragraph(nb_sentences=rng.randint(1, 2) if hand else rng.randint(3, 6))
        lines = _wrap(draw, text, font, WIDTH - x0 - 150)[: (3 if hand else 12)]
        top = y
        for line in lines:
            draw.text((x0, y), line, font=font, fill=rng.randint(0, 80))
            y += int(size * (1.5 if hand else 1.3))
        if hand:
            notes.append((x0 - 10, top - 10, WIDTH - 140, y + 10))
        y += rng.randint(60, 140)
    if rng.random() < 0.5:
        page = Image.fromarray(age(np.asarray(page.convert("RGB")), rng)).convert("L")
    return page.convert("RGB"), notes


def _inside(box, notes) -> bool:
    x0, y0, x1, y1 = box
    area = max(1.0, (x1 - x0) * (y1 - y0))
    for n0, m0, n1, m1 in notes:
        overlap = max(0.0, min(x1, n1) - max(x0, n0)) * max(0.0, min(y1, m1) - max(y0, m0))
        if overlap > 0.5 * area:
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=Path("artifacts/handwriting_bench.json"))
    parser.add_argument("--printed", type=Path, action="append", default=[],
                        help="a folder of real typeset page images: count the regions marked there")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    fake = Faker("en_US")
    fake.seed_instance(args.seed)
    tp = fp = fn = tn = 0
    per_page, seconds = [], 0.0
    for number in range(args.pages):
        image, notes = make_page(rng, fake)
        layout = analyze_page(image, num_threads=2)
        for block in layout.blocks:
            if block.task is not RecognitionTask.TEXT or not block.lines:
                continue
            started = time.process_time()
            marked = is_handwriting(line_scores(image, sampled([line.bbox for line in block.lines])))
            seconds += time.process_time() - started
            truth = _inside(block.region.bbox, notes)
            tp += marked and truth
            fp += marked and not truth
            fn += truth and not marked
            tn += not marked and not truth
            per_page.append({"page": number, "bbox": [round(v) for v in block.region.bbox], "truth": truth,
                             "marked": marked})
        print(f"page {number + 1}/{args.pages}: tp {tp} fp {fp} fn {fn} tn {tn}", flush=True)
    printed_pages = sorted(p for folder in args.printed for p in folder.iterdir()
                           if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
    real_regions, real_marked, marked_where = 0, 0, []
    for path in printed_pages:
        image = Image.open(path).convert("RGB")
        for block in analyze_page(image, num_threads=2).blocks:
            if block.task is RecognitionTask.TEXT and block.lines:
                real_regions += 1
                if is_handwriting(line_scores(image, sampled([line.bbox for line in block.lines]))):
                    real_marked += 1
                    marked_where.append(f"{path.parent.name}/{path.name} {[round(v) for v in block.region.bbox]}")
        print(f"{path.parent.name}/{path.name}: {real_marked} of {real_regions} regions marked so far", flush=True)
    summary = {"pages": args.pages, "regions": tp + fp + fn + tn, "handwriting_regions": tp + fn,
               "printed_regions": fp + tn, "precision": round(tp / max(1, tp + fp), 3),
               "recall": round(tp / max(1, tp + fn), 3), "printed_marked": fp,
               "classifier_cpu_s_per_region": round(seconds / max(1, tp + fp + fn + tn), 4),
               "real_printed_pages": len(printed_pages), "real_printed_regions": real_regions,
               "real_printed_marked": real_marked, "real_printed_marked_where": marked_where}
    print("\n| regions | handwriting | printed | precision | recall | printed marked | CPU s/region |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {summary['regions']} | {summary['handwriting_regions']} | {summary['printed_regions']} | "
          f"{summary['precision']} | {summary['recall']} | {fp} | {summary['classifier_cpu_s_per_region']} |")
    if printed_pages:
        print(f"\nreal typeset pages: {len(printed_pages)}, text regions {real_regions}, marked as handwriting "
              f"{real_marked}" + "".join(f"\n  {where}" for where in marked_where))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "regions": per_page}, indent=1) + "\n")


if __name__ == "__main__":
    main()
