"""Born-digital pages under `--text-layer auto`: does the body text say what the layer says?

    .venv/bin/python bench/layer_fidelity.py --out artifacts/layer_fidelity.json
    .venv/bin/python bench/layer_fidelity.py --rescore      # score the last run's outputs again

Issue 31's third target: on the pages of `bench/text_layer_modes.py` (the first two listed of
each document of `bench/real_pages.json`, each cut into a one-page PDF that keeps its layer),
`ocrserve run --text-layer auto --keep-furniture` (defaults otherwise), body regions only, both
sides normalised alike (`real_pages_metrics.normalise`): no word that is not in the layer, and
CER against the layer under 0.01.

Per page: the text of its body regions (role `body`; page furniture, formula regions, figures
and tables aside: a table's Markdown and a formula's LaTeX are not the layer's spelling), in
reading order, against the layer's words whose centres lie in those regions, in the layer's own
order within each region (a word hyphenated at a line's end joined, as ocrserve joins it). "Invented" words are the output's words that no word of the page's
layer spells (any region, any order): what the run added. Pages whose layer failed its checks are
recognised from their pixels; they are listed apart (their words are the recogniser's).
Prints a table and the worst pages; `--out` gets the JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from real_pages import load_pages  # noqa: E402
from real_pages_metrics import cer, normalise, words as metric_words  # noqa: E402
from text_layer_modes import cut_pages, run_mode  # noqa: E402

from vision.text_normal import normalise_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET_CER = 0.01


def layer_words(pdf: Path, dpi: float) -> list[tuple[str, float, float]]:
    """(word, centre x, centre y) in pixels at `dpi`, in the layer's order, spelt as ocrserve spells
    it. A word hyphenated at a line's end before a lower-case continuation is one word, as the
    metrics' normalisation joins the output's lines, placed where its first part is."""
    with pymupdf.open(pdf) as doc:
        page = doc[0]
        scale = dpi / 72.0
        matrix = page.rotation_matrix * pymupdf.Matrix(scale, scale)
        raw = page.get_text("words")
        words: list[tuple[str, float, float]] = []
        k = 0
        while k < len(raw):
            x0, y0, x1, y1, text, block, line, _ = raw[k]
            text = normalise_text(text)
            last_of_line = k + 1 == len(raw) or raw[k + 1][5:7] != (block, line)
            following = normalise_text(raw[k + 1][4]) if k + 1 < len(raw) else ""
            if last_of_line and text.endswith("-") and len(text) > 1 and following[:1].islower():
                text = text[:-1] + following
                k += 1
            box = pymupdf.Rect(x0, y0, x1, y1) * matrix
            words.append((text, (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2))
            k += 1
        return words


def is_body_text(region: dict) -> bool:
    """A body region read as text (not furniture, a table, a formula or a figure)."""
    return region["role"] == "body" and region["task"] == "text"


def score_page(result: dict, pdf: Path) -> dict:
    page = result["documents"][0]["pages"][0]
    note = page.get("text_layer") or ""
    used = note.startswith("text layer used")
    words = layer_words(pdf, page["dpi"])
    regions = [r for r in page["regions"] if is_body_text(r)]
    ours, theirs = [], []
    for region in sorted(regions, key=lambda r: r["reading_index"]):
        x0, y0, x1, y1 = region["bbox"]
        ours.append(region["text"])
        theirs.append(" ".join(w for w, cx, cy in words if x0 <= cx <= x1 and y0 <= cy <= y1))
    ours_text, truth_text = normalise(" ".join(ours)), normalise(" ".join(theirs))
    spelt = set(metric_words(normalise(" ".join(w for w, _, _ in words))))
    invented = [w for w in metric_words(ours_text) if w not in spelt]
    return {"layer_used": used, "regions": len(regions), "chars": len(truth_text),
            "cer": cer(ours_text, truth_text) if truth_text else (0.0 if not ours_text else 1.0),
            "invented": invented, "note": note[:160]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "layer_fidelity")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="all")
    parser.add_argument("--max-pages", type=int, default=2)
    parser.add_argument("--rescore", action="store_true", help="score the outputs already in the work dir")
    parser.add_argument("--worst", type=int, default=8)
    args = parser.parse_args()
    pages, _ = load_pages(args.split, set(), args.max_pages)
    work = args.work.resolve()
    seconds = None
    if not args.rescore:
        pdfs = cut_pages(pages, work)
        seconds = run_mode("auto", pdfs, work / "auto")
    rows = {}
    for page in pages:
        result = json.loads((work / "auto" / f"{page.name}.json").read_text())
        rows[page.name] = {"split": page.split, **score_page(result, work / "pdf" / f"{page.name}.pdf")}
    used = {name: row for name, row in rows.items() if row["layer_used"]}
    pooled_chars = sum(row["chars"] for row in used.values())
    summary = {
        "pages": len(rows), "layer_used": len(used), "seconds": seconds,
        "median_cer": statistics.median(row["cer"] for row in used.values()) if used else None,
        "pooled_cer": (sum(row["cer"] * row["chars"] for row in used.values()) / pooled_chars) if pooled_chars else None,
        "pages_cer_at_most_target": sum(row["cer"] < TARGET_CER for row in used.values()),
        "pages_with_invented_words": sum(bool(row["invented"]) for row in used.values()),
        "invented_words": sum(len(row["invented"]) for row in used.values()),
    }
    print(f"{len(rows)} pages, the layer used on {len(used)} (the others recognised from pixels: "
          f"{', '.join(n for n in rows if n not in used) or 'none'})")
    print(f"body regions against the layer: median CER {summary['median_cer']:.4f}, pooled {summary['pooled_cer']:.4f}; "
          f"{summary['pages_cer_at_most_target']}/{len(used)} pages under {TARGET_CER}; "
          f"{summary['invented_words']} words not in the layer on {summary['pages_with_invented_words']} pages")
    for name, row in sorted(used.items(), key=lambda item: -item[1]["cer"])[:args.worst]:
        print(f"  {name} ({row['split']}): CER {row['cer']:.4f}, invented {row['invented'][:8]}")
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "pages": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
