"""The text-layer modes on real born-digital PDF pages, one run, side by side: `never` (recognise
everything), `verify` (recognise everything, each line's layer text sent as the engine's draft)
and `auto` (take the layer's text where it passes its checks).

    .venv/bin/python bench/text_layer_modes.py --max-pages 2 --out artifacts/text_layer_modes.json

Pages: those of `bench/real_pages.json` (real typeset documents that Debian packages install;
`bench/real_pages.py --install` installs them), each cut into a one-page PDF that keeps its text
layer, so every page gets its own NAME.txt and NAME.json. Each mode is one `ocrserve run` over all
of them (house model, defaults otherwise), wall time from launch to exit, start-up included.
Modes run in the order never, verify, auto, then verify and never again, and the two runs of each
are averaged, so drift in the machine's load hits both alike.

Per mode: seconds per page, median CER and word recall against the page's own text layer
(bench/real_pages_metrics.py); for verify, how many pages' text is byte for byte never's (the
drafts may change the speed only, never the reading) and how many of its verified regions
agree with the layer (`text_layer_check`). A table, then the JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_pages import load_pages  # noqa: E402
from real_pages_metrics import page_scores, totals  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("never", "verify", "auto")
ORDER = ("never", "verify", "auto", "verify", "never")


def cut_pages(pages, work: Path) -> list[Path]:
    """One single-page PDF per listed page, its text layer kept; and its truth text."""
    (work / "pdf").mkdir(parents=True, exist_ok=True)
    (work / "truth").mkdir(parents=True, exist_ok=True)
    paths = []
    for page in pages:
        if not page.pdf.exists():
            sys.exit(f"{page.pdf} is missing: run bench/real_pages.py --install (package {page.package})")
        target = work / "pdf" / f"{page.name}.pdf"
        with pymupdf.open(page.pdf) as source:
            (work / "truth" / f"{page.name}.txt").write_text(source[page.number - 1].get_text())
            with pymupdf.open() as single:
                single.insert_pdf(source, from_page=page.number - 1, to_page=page.number - 1)
                single.save(target)
        paths.append(target)
    return paths


def run_mode(mode: str, pdfs: list[Path], out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "ocrserve"), "run", *map(str, pdfs), "--out", str(out),
               "--formats", "txt,json", "--force", "--quiet", "--text-layer", mode, "--keep-furniture"]
    started = time.perf_counter()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        sys.exit(f"ocrserve run --text-layer {mode} exited {code}; see {out / 'run.log'}")
    return time.perf_counter() - started


def checks(json_path: Path) -> list[str]:
    data = json.loads(json_path.read_text())
    return [region.get("text_layer_check") for document in data["documents"] for page in document["pages"]
            for region in page["regions"] if region.get("text_layer_check") is not None]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "text_layer_modes")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "text_layer_modes.json")
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="all")
    parser.add_argument("--max-pages", type=int, default=2, help="at most N pages of each document")
    parser.add_argument("--rescore", action="store_true",
                        help="score the outputs and run times already in the work dir; run nothing")
    args = parser.parse_args()
    pages, _ = load_pages(args.split, set(), args.max_pages)
    timing = args.work / "seconds.json"
    if args.rescore:
        seconds = json.loads(timing.read_text())
    else:
        pdfs = cut_pages(pages, args.work)
        seconds = {mode: [] for mode in MODES}
        for i, mode in enumerate(ORDER):
            seconds[mode].append(run_mode(mode, pdfs, args.work / f"{mode}-{i}"))
            timing.write_text(json.dumps(seconds))
            print(f"run {i + 1}/{len(ORDER)}: {mode} {seconds[mode][-1]:.1f} s", flush=True)
    last = {mode: args.work / f"{mode}-{max(i for i, m in enumerate(ORDER) if m == mode)}" for mode in MODES}
    texts = {mode: {p.name: (last[mode] / f"{p.name}.txt").read_text() for p in pages} for mode in MODES}
    truths = {p.name: (args.work / "truth" / f"{p.name}.txt").read_text() for p in pages}
    results = {"pages": len(pages), "documents": len({p.doc for p in pages}), "order": list(ORDER), "modes": {}}
    print(f"\n{'mode':8} {'runs (s)':>16} {'s/page':>7} {'median CER':>11} {'median recall':>14} "
          f"{'pages = never':>14} {'regions agree/verified':>23}")
    for mode in MODES:
        scores = [page_scores(texts[mode][name], truths[name]) for name in truths]
        summary = totals(scores)
        same = sum(texts[mode][name] == texts["never"][name] for name in truths)
        verdicts = [c for p in pages for c in checks(last[mode] / f"{p.name}.json")]
        row = {"seconds": seconds[mode], "s_per_page": statistics.mean(seconds[mode]) / len(pages),
               "median_cer": summary["median_cer"], "median_recall": summary["median_recall"],
               "pages_same_text_as_never": same, "regions_verified": len(verdicts),
               "regions_agreeing": verdicts.count("agrees")}
        results["modes"][mode] = row
        runs = "/".join(f"{s:.0f}" for s in seconds[mode])
        agree = f"{row['regions_agreeing']}/{row['regions_verified']}" if verdicts else "-"
        print(f"{mode:8} {runs:>16} {row['s_per_page']:>7.2f} {row['median_cer']:>11.3f} "
              f"{row['median_recall']:>14.3f} {same:>8}/{len(pages):<5} {agree:>23}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"JSON: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
