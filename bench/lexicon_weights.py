"""How the word list's weight was chosen (`workers/recognizers/lexicon.py`), on dev pages only.

Runs the page pipeline in this process (house model on its own engine process, routing as shipped)
over the real-page set's dev pages as `bench/real_pages.py` built them (run that first, with
`--keep`), records every line the house model read with its tokens' alternatives, then replays the
word list over those readings at each weight asked for, with and without the page adaptation. For
each word a setting changes it counts:
- good: the new word is in the page's truth and the word as read is not;
- bad: the reverse;
- neither: both or neither are in the truth (mostly pages neither reader can read).

    .venv/bin/python bench/lexicon_weights.py --variants clean,scan,augraphy --weights 0.5,0.75,1.0

Prints a table and writes JSON (`--out`). Dev pages only: the weight is chosen on dev.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import subprocess
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from real_pages import load_pages  # noqa: E402   (bench/ is on sys.path when this file runs)
from vision.document import Document  # noqa: E402
from workers.page_pipeline import PagePipeline  # noqa: E402
from workers.recognizers import lexicon  # noqa: E402
from workers.recognizers.base import RecognitionOutcome  # noqa: E402
from workers.recognizers.openai_compatible import HOUSE_ALTERNATIVES, OpenAIVisionRecognizer  # noqa: E402
from workers.recognizers.routing import RoutingRecognizer  # noqa: E402

INPUTS = {"clean": ("pdf", "pdf"), "scan": ("scan", "jpg"), "augraphy": ("augraphy", "jpg")}
WORD = re.compile(r"[^\W\d_]+")


class Recording:
    """The house model's recogniser, keeping what it read."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name
        self.reads_single_lines, self.softens_noisy_lines = inner.reads_single_lines, inner.softens_noisy_lines
        self.read: list[RecognitionOutcome] = []

    def recognize(self, items):
        outcomes = self.inner.recognize(items)
        self.read.extend(outcomes)
        return outcomes

    def check(self):
        self.inner.check()


def dev_pages(work: Path, variants: list[str], max_pages: int) -> list[tuple[str, str, Path]]:
    """(variant, page name, input file) of the dev split's pages that real_pages.py built."""
    pages, _ = load_pages("dev", set(), max_pages)
    found = []
    for variant in variants:
        folder, ext = INPUTS[variant]
        found += [(variant, page.name, work / folder / f"{page.name}.{ext}") for page in pages
                  if (work / folder / f"{page.name}.{ext}").exists()]
    return found


def record(pages, engine_url: str) -> list[dict]:
    primary = Recording(OpenAIVisionRecognizer(engine_url, "house-ocr", reads_single_lines=True, name="house",
                                               alternatives=HOUSE_ALTERNATIVES))
    pipeline = PagePipeline(RoutingRecognizer(primary), vision_num_threads=2)
    records = []
    for variant, name, path in pages:
        primary.read = []
        with Document.open(path.read_bytes(), path.name) as document:
            pipeline.process(document, document.render_page(0), 0)
        records.append({"variant": variant, "name": name, "read": [o for o in primary.read if o.ok]})
        print(f"{variant} {name}: {len(primary.read)} lines", flush=True)
    return records


def count(records, truth_dir: Path, weight: float, adapt: bool) -> dict[str, collections.Counter]:
    lexicon.LEXICON_WEIGHT = weight
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for page in records:
        text = unicodedata.normalize("NFKC", (truth_dir / f"{page['name']}.txt").read_text())
        truth = collections.Counter(word.lower() for word in WORD.findall(text))
        read = page["read"]
        fixed = (lexicon.read_page_against_lexicon(read, "eng") if adapt
                 else [lexicon.read_against_lexicon(outcome, "eng") for outcome in read])
        for before, after in zip(read, fixed):
            for old, new in zip(WORD.findall(before.text), WORD.findall(after.text)):
                if old != new:
                    found_old, found_new = truth[old.lower()] > 0, truth[new.lower()] > 0
                    kind = "good" if found_new and not found_old else "bad" if found_old and not found_new else "neither"
                    counts[page["variant"]][kind] += 1
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "real_pages")
    parser.add_argument("--variants", default="clean,scan,augraphy")
    parser.add_argument("--weights", default="0.5,0.75,1.0")
    parser.add_argument("--max-pages", type=int, default=2, help="pages of each document, as real_pages.py ran")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "lexicon_weights.json")
    args = parser.parse_args()
    pages = dev_pages(args.work, args.variants.split(","), args.max_pages)
    if not pages:
        print(f"no dev pages under {args.work}: run bench/real_pages.py --keep first", file=sys.stderr)
        return 2
    engine = subprocess.Popen([sys.executable, "-m", "engine.server", "--model", "house-ocr", "--host", "127.0.0.1",
                               "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        ready = engine.stdout.readline()
        url = re.search(r"http://[\d.]+:\d+", ready)
        if url is None:
            print(f"the engine did not start: {ready!r}", file=sys.stderr)
            return 1
        records = record(pages, url.group() + "/v1")
    finally:
        engine.send_signal(signal.SIGTERM)
        engine.wait(60)
    rows = []
    print(f"\n{'weight':>6} {'adapt':>5} " + " ".join(f"{v + ' good/bad/neither':>26}" for v in args.variants.split(",")))
    for weight in map(float, args.weights.split(",")):
        for adapt in (False, True):
            counts = count(records, args.work / "truth", weight, adapt)
            rows.append({"weight": weight, "adapt": adapt, "counts": {v: dict(c) for v, c in counts.items()}})
            print(f"{weight:>6} {str(adapt):>5} " + " ".join(
                f"{counts[v]['good']:>12} /{counts[v]['bad']:>4} /{counts[v]['neither']:>5}" for v in args.variants.split(",")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"pages": [[v, n] for v, n, _ in pages], "rows": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
