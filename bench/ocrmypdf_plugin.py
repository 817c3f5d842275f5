"""OCRmyPDF with ocrserve (the ocrmypdf-ocrserve plugin) against OCRmyPDF with its own Tesseract.

    nice -n 10 .venv/bin/python bench/ocrmypdf_plugin.py --max-pages 2 --out artifacts/ocrmypdf_plugin.json

Pages: the real-page set of bench/real_pages.py (its page lists, its truth: the PDF page's own
text layer), in its two damaged variants, the images it already made under
`artifacts/real_pages` (`bench/real_pages.py --keep` builds them): `scan` (a 150-DPI scan-like
JPEG) and `augraphy` (a 300-DPI render degraded by augraphy's default pipeline). Each image is
made into a one-page image PDF at the image's own DPI (img2pdf: the JPEG goes in unchanged),
the file a scanner gives an OCRmyPDF user.

Systems, each one `ocrmypdf` command per page PDF, as a user runs it on a file:
- `tesseract`: `ocrmypdf -l eng --tesseract-timeout 1500 IN OUT` (OCRmyPDF's defaults, its
  Tesseract, PDF/A output; only the timeout raised from 180 s, which a loaded machine passes);
- `ocrserve`: `ocrmypdf --plugin ocrmypdf_ocrserve -l eng IN OUT`, everything else the same; the
  plugin starts our engine for the run, so each page pays its start-up;
- `ocrserve_shared` (optional): the same, with `--ocrserve-engine-url` naming one engine started
  by this script for the whole benchmark (the way a batch would run); the engine's own CPU
  time is counted (psutil), spread over the pages.
Per page the systems run one after the other, the order alternating from page to page, so drift
in the machine's load hits both alike.

Scores: the output PDF's text layer (PyMuPDF `get_text()`) against the truth, by
bench/real_pages_metrics.py: per page CER and word recall (order-free); per variant and split
(dev, held out) the medians, pooled CER and the pages with recall below 0.9; the worst pages.
Time: wall seconds and CPU seconds (user + system of the ocrmypdf process and its children, from
getrusage) per page, start-up included.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import img2pdf
import pymupdf

from real_pages import ROOT, SPLITS, Page, load_pages   # bench/ is on sys.path when this file runs
from real_pages_metrics import page_scores, totals

VARIANTS = {"scan": ("scan", ".jpg"), "augraphy": ("augraphy", ".jpg")}   # variant -> (folder, suffix)
SYSTEMS = ("tesseract", "ocrserve", "ocrserve_shared")
PLUGIN = ("--plugin", "ocrmypdf_ocrserve")
OCRMYPDF = str(Path(sys.executable).parent / "ocrmypdf")
RUN_TIMEOUT_S = 1800
# OCRmyPDF gives Tesseract 180 s a page and, past that, writes the page with no text and exits 0.
# On a loaded machine a dense page takes longer, and a timeout is not a reading: Tesseract gets
# as long as it needs. (ocrserve has no such limit in OCRmyPDF.)
TESSERACT_TIMEOUT_S = 1500


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def page_pdf(image: Path, target: Path) -> Path:
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(img2pdf.convert(str(image)))
    return target


def run_ocrmypdf(system: str, source: Path, target: Path, engine_url: str | None) -> dict:
    extra = {"tesseract": ("--tesseract-timeout", str(TESSERACT_TIMEOUT_S)), "ocrserve": PLUGIN,
             "ocrserve_shared": (*PLUGIN, "--ocrserve-engine-url", engine_url or "")}[system]
    command = [OCRMYPDF, *extra, "-l", "eng", "--quiet", str(source), str(target)]
    started, cpu = time.perf_counter(), _cpu_children()
    done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    run = {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu, "returncode": done.returncode}
    if done.returncode:
        run["stderr_tail"] = done.stderr[-2000:]
    return run


def text_layer(pdf: Path) -> str:
    if not pdf.exists():
        return ""
    with pymupdf.open(pdf) as document:
        return "".join(page.get_text() for page in document)


class SharedEngine:
    """One engine for `ocrserve_shared`, its CPU time read before and after each page."""

    def __init__(self, log: Path):
        import psutil

        from app.local_services import child_env, start_engine, with_engine_keys
        from workers.settings import Settings

        settings = with_engine_keys(Settings())
        self.engine, self.url = start_engine(settings, child_env(settings), 0, log, api_key=settings.engine_api_key)
        os.environ["OCRSERVE_ENGINE_API_KEY"] = settings.engine_api_key or ""   # the runs' key, never argv
        self.process = psutil.Process(self.engine.popen.pid)

    def cpu_s(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def stop(self) -> None:
        self.engine.stop()


def summarise(rows: list[dict], variants: list[str], systems: list[str]) -> dict:
    summary: dict = {}
    for variant in variants:
        of_variant = [row for row in rows if row["variant"] == variant]
        for split in (*SPLITS, "all"):
            chosen = [row for row in of_variant if split in (row["split"], "all")]
            if chosen:
                summary.setdefault(variant, {})[split] = {
                    system: totals([row[system] for row in chosen]) for system in systems}
        summary.setdefault(variant, {})["time"] = {system: {
            "cpu_s_per_page": statistics.fmean(row[system]["run"]["cpu_s"] for row in of_variant),
            "median_cpu_s": statistics.median(row[system]["run"]["cpu_s"] for row in of_variant),
            "wall_s_per_page": statistics.fmean(row[system]["run"]["wall_s"] for row in of_variant),
            "median_wall_s": statistics.median(row[system]["run"]["wall_s"] for row in of_variant),
            "failed_runs": sum(row[system]["run"]["returncode"] != 0 for row in of_variant)}
            for system in systems} if of_variant else {}
    return summary


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_report(rows: list[dict], summary: dict, systems: list[str], worst: int) -> None:
    for variant, by_split in summary.items():
        print(f"\n== {variant} ==")
        print(f"{'split':<9} {'system':<16} {'pages':>5} {'med CER':>8} {'pool CER':>8} {'med rec':>8} {'rec<0.9':>7}")
        for split in (*SPLITS, "all"):
            for system in systems if split in by_split else ():
                t = by_split[split][system]
                print(f"{split:<9} {system:<16} {t['pages']:>5} {_fmt(t['median_cer'], '.3f'):>8} "
                      f"{t['pooled_cer']:>8.3f} {_fmt(t['median_recall'], '.3f'):>8} {t['recall_below_0.9']:>7}")
        print("per page, start-up included: " + "; ".join(
            f"{system} {t['cpu_s_per_page']:.2f} s CPU (median {t['median_cpu_s']:.2f}), "
            f"{t['wall_s_per_page']:.2f} s wall (median {t['median_wall_s']:.2f}), "
            f"{t['failed_runs']} runs failed" for system, t in by_split["time"].items()))
        of_variant = [row for row in rows if row["variant"] == variant]
        for title, key in (("highest ocrserve CER", lambda row: -row["ocrserve"]["cer"]),
                           ("ocrserve recall furthest below Tesseract's",
                            lambda row: row["ocrserve"]["recall"] - row["tesseract"]["recall"])):
            print(f"worst {min(worst, len(of_variant))} pages, {title} (CER o/t, recall o/t):")
            for row in sorted(of_variant, key=key)[:worst]:
                o, t = row["ocrserve"], row["tesseract"]
                print(f"  {row['name']:<28} {row['split']:<8} {o['cer']:>6.3f}/{t['cer']:<6.3f} "
                      f"{o['recall']:>6.3f}/{t['recall']:<6.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "real_pages",
                        help="bench/real_pages.py's work dir (images, truth); outputs go under its ocrmypdf/")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "ocrmypdf_plugin.json")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    parser.add_argument("--systems", default="tesseract,ocrserve", help="comma-separated: " + ",".join(SYSTEMS))
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--docs", default="", help="comma-separated document names (PDF stems)")
    parser.add_argument("--max-pages", type=int, default=2, help="at most N pages of each document")
    parser.add_argument("--resume", action="store_true", help="keep the outputs of runs already done")
    parser.add_argument("--score-done", action="store_true", help="run nothing: score the pages every system "
                        "has already run (what a run cut short left)")
    parser.add_argument("--worst", type=int, default=6)
    args = parser.parse_args()
    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    if not variants or not {"tesseract", "ocrserve"} <= set(systems):
        parser.error("--variants must name a known variant and --systems at least tesseract and ocrserve")
    pages, _ = load_pages(args.split, set(filter(None, args.docs.split(","))), args.max_pages)
    # every document's first page, then every second page..., dev and held-out documents taking
    # turns: a run cut short has read pages of both splits
    rank = {page: sum(p.doc == page.doc for p in pages[:i]) for i, page in enumerate(pages)}
    turn = {page: sum(rank[p] == rank[page] and p.split == page.split for p in pages[:i])
            for i, page in enumerate(pages)}
    pages.sort(key=lambda page: (rank[page], turn[page], page.split))
    missing = [str(args.work / VARIANTS[v][0] / f"{p.name}{VARIANTS[v][1]}") for v in variants for p in pages
               if not (args.work / VARIANTS[v][0] / f"{p.name}{VARIANTS[v][1]}").exists()]
    if not pages or missing:
        parser.error(f"no pages, or images missing (make them with bench/real_pages.py --keep): {missing[:3]}")
    print(f"{len(pages)} pages ({sum(p.split == 'held_out' for p in pages)} held out), variants "
          f"{','.join(variants)}, systems {','.join(systems)}", flush=True)

    base = args.work / "ocrmypdf"
    base.mkdir(parents=True, exist_ok=True)
    shared = SharedEngine(base / "shared-engine.log") if "ocrserve_shared" in systems and not args.score_done \
        else None
    rows = []
    try:
        # page by page, each variant in turn: a run cut short leaves the same pages done in both
        for index, page in enumerate(pages):
            truth = (args.work / "truth" / f"{page.name}.txt").read_text()
            for variant in variants:
                folder, suffix = VARIANTS[variant]
                outs = {system: base / variant / system for system in systems}
                if args.score_done and not all((outs[s] / f"{page.name}.run.json").exists() for s in systems):
                    continue
                source = page_pdf(args.work / folder / f"{page.name}{suffix}", base / variant / "in" / f"{page.name}.pdf")
                row = {"name": page.name, "doc": page.doc, "split": page.split, "variant": variant}
                for system in systems if index % 2 == 0 else systems[::-1]:
                    row[system] = _one(system, page, source, outs[system], truth, args.resume or args.score_done,
                                       shared)
                rows.append(row)
                print(f"{variant} {index + 1}/{len(pages)} {page.name}: " + "  ".join(
                    f"{s} CER {row[s]['cer']:.3f} rec {row[s]['recall']:.3f} {row[s]['run']['wall_s']:.0f}s"
                    for s in systems), flush=True)
    finally:
        if shared is not None:
            shared.stop()
    summary = summarise(rows, variants, systems)
    print_report(rows, summary, systems, args.worst)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "pages": rows, "systems": systems,
                                    "ocrmypdf": subprocess.run([OCRMYPDF, "--version"], capture_output=True,
                                                               text=True).stdout.strip(),
                                    "date": time.strftime("%Y-%m-%d", time.gmtime())}, indent=1))
    print(f"\nwrote {args.out}")
    return 0


def _one(system: str, page: Page, source: Path, out: Path, truth: str, resume: bool,
         shared: SharedEngine | None) -> dict:
    target, record = out / f"{page.name}.pdf", out / f"{page.name}.run.json"
    if resume and record.exists():
        run = json.loads(record.read_text())
    else:
        out.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        engine_cpu = shared.cpu_s() if system == "ocrserve_shared" and shared else None
        run = run_ocrmypdf(system, source, target, shared.url if shared else None)
        if engine_cpu is not None and shared is not None:
            run["cpu_s"] += shared.cpu_s() - engine_cpu   # the shared engine is not this run's child
        record.write_text(json.dumps(run))
    return page_scores(text_layer(target), truth) | {"run": run}


if __name__ == "__main__":
    sys.exit(main())
