"""ocrserve against whole-page Tesseract on pages of real typeset documents.

    sudo .venv/bin/python bench/real_pages.py --install     # once: the Debian packages holding the PDFs
    .venv/bin/python bench/real_pages.py --out artifacts/real_pages.json

Pages: `bench/real_pages.json` lists 75 pages of 15 documents that Debian documentation
packages install (R and Octave manuals, LaTeX package guides, journal and conference
templates, a reference card): title pages, contents, indexes, code listings, tables,
mathematics, two- and three-column layouts. Every third document in that list is held out
(never tuned on) and reported on its own. Each page exists twice, both at 150 DPI:
- clean: the page rendered to PNG;
- scan: the same render rotated a little, blurred, noised, toned like paper and saved as JPEG
  (`scan_like` of bench/house_ocr_eval.py, seeded by the page's name, so it is the same in
  every run; re-saved at JPEG quality 95, the damage is its own quality 45-70 pass).
Truth: the PDF page's own text layer (`page.get_text()`), in its order.

Systems, in one run, on the same image files (work dir, default artifacts/real_pages/):
- `ocrserve`: one `ocrserve run FILES --out DIR --formats txt,json --force` batch per
  variant, defaults otherwise (house model); wall time from launch to exit, start-up included;
  the text is NAME.txt, the per-stage timings and regions come from NAME.json;
- `tesseract`: `tesseract IMAGE OUT --psm 3 -l eng` on every image, two single-threaded
  processes at once (OMP_THREAD_LIMIT=1), wall time for the whole variant.
Order: clean runs ocrserve then Tesseract, scan runs Tesseract then ocrserve, so that drift in
the machine's load hits both alike.

Scores (bench/real_pages_metrics.py says exactly how text is normalised and scored): per page
CER, order-free word recall and precision, an order score and output/truth characters; per
variant and split the medians, pooled CER, pages with recall below 0.9, the pages whose
ocrserve recall is more than 0.05 below Tesseract's, and seconds per page of each system.
Targets (issue 17), clean and scan alike: no page more than 0.05 below Tesseract's word
recall; median word recall and median CER both better than Tesseract's.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image

from house_ocr_eval import scan_like   # bench/ is on sys.path when this file runs
from real_pages_metrics import page_scores, totals

ROOT = Path(__file__).resolve().parent.parent
PAGE_LIST = ROOT / "bench" / "real_pages.json"
DPI = 150
SYSTEMS = ("ocrserve", "tesseract")
VARIANTS = {"clean": ".png", "scan": ".jpg"}
SPLITS = ("dev", "held_out")
RECALL_MARGIN = 0.05


@dataclass(frozen=True)
class Page:
    doc: str        # the PDF's stem, e.g. R-intro
    pdf: Path
    package: str
    split: str
    number: int     # 1-based
    what: str

    @property
    def name(self) -> str:
        return f"{self.doc}_p{self.number:04d}"


def load_pages(split: str, docs: set[str], max_pages: int | None) -> tuple[list[Page], dict]:
    listing = json.loads(PAGE_LIST.read_text())
    pages = []
    for doc in listing["documents"]:
        stem = Path(doc["path"]).stem
        if (split != "all" and doc["split"] != split) or (docs and stem not in docs):
            continue
        entries = [entry if isinstance(entry, dict) else {"page": entry, "what": ""} for entry in doc["pages"]]
        pages += [Page(stem, Path(doc["path"]), doc["package"], doc["split"], entry["page"], entry["what"])
                  for entry in entries[:max_pages]]
    return pages, listing


def install(packages: set[str]) -> None:
    """apt-get install the packages (and Tesseract) that are missing; needs root."""
    wanted = sorted(packages | {"tesseract-ocr", "tesseract-ocr-eng"})
    missing = [name for name in wanted if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True).stdout != "install ok installed"]
    if not missing:
        print("all packages installed:", " ".join(wanted))
        return
    if os.geteuid() != 0:
        sys.exit(f"--install needs root; missing: {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env)


def build(pages: list[Page], work: Path, seed: int, keep: bool) -> None:
    """clean/NAME.png, scan/NAME.jpg and truth/NAME.txt for every page."""
    for folder in ("clean", "scan", "truth"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    documents: dict[Path, pymupdf.Document] = {}
    for page in pages:
        clean, scan = work / "clean" / f"{page.name}.png", work / "scan" / f"{page.name}.jpg"
        truth = work / "truth" / f"{page.name}.txt"
        if keep and clean.exists() and scan.exists() and truth.exists():
            continue
        if not page.pdf.exists():
            sys.exit(f"{page.pdf} is missing: run with --install (package {page.package})")
        document = documents.setdefault(page.pdf, pymupdf.open(page.pdf))
        pdf_page = document[page.number - 1]
        truth.write_text(pdf_page.get_text())
        pix = pdf_page.get_pixmap(dpi=DPI, colorspace=pymupdf.csRGB, alpha=False)
        image = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)
        Image.fromarray(image).save(clean, dpi=(DPI, DPI))
        damaged = scan_like(image.copy(), random.Random(f"{seed}/{page.name}"))
        Image.fromarray(damaged).save(scan, quality=95, dpi=(DPI, DPI))
    for document in documents.values():
        document.close()


def run_ocrserve(images: list[Path], out: Path) -> dict:
    command = [str(Path(sys.executable).parent / "ocrserve"), "run", *map(str, images), "--out", str(out),
               "--formats", "txt,json", "--force", "--quiet"]
    started = time.perf_counter()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    return {"wall_s": time.perf_counter() - started, "returncode": code}


def run_tesseract(images: list[Path], out: Path) -> dict:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def one(image: Path) -> int:
        done = subprocess.run(["tesseract", str(image), str(out / image.stem), "--psm", "3", "-l", "eng"],
                              capture_output=True, text=True, env=env)
        return done.returncode

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(one, images))
    return {"wall_s": time.perf_counter() - started, "returncode": max(codes, default=0)}


def read_output(system: str, out: Path, page: Page) -> dict:
    """The system's text for a page, and for ocrserve its stage timings and region labels."""
    text_file = out / f"{page.name}.txt"
    found = {"text": text_file.read_text() if text_file.exists() else "", "missing": not text_file.exists()}
    result = out / f"{page.name}.json"
    if system == "ocrserve" and result.exists():
        page_result = json.loads(result.read_text())["documents"][0]["pages"][0]
        labels: dict[str, int] = {}
        for region in page_result["regions"]:
            labels[region["label"]] = labels.get(region["label"], 0) + 1
        found |= {"timings": page_result.get("timings"), "regions": labels, "state": page_result.get("state")}
    return found


def summarise(rows: list[dict], runs: dict, variants: list[str], systems: list[str]) -> dict:
    summary: dict = {}
    for variant in variants:
        for split in (*SPLITS, "all"):
            chosen = [row for row in rows if row["variant"] == variant and split in (row["split"], "all")]
            if not chosen:
                continue
            entry = {system: totals([row[system] for row in chosen]) for system in systems}
            if len(systems) == 2:
                entry["recall_below_tesseract"] = [
                    row["name"] for row in chosen
                    if row["ocrserve"]["recall"] < row["tesseract"]["recall"] - RECALL_MARGIN]
                o, t = entry["ocrserve"], entry["tesseract"]
                entry["targets_met"] = {
                    "no_page_below_tesseract_recall": not entry["recall_below_tesseract"],
                    "median_recall_better": o["median_recall"] > t["median_recall"],
                    "median_cer_better": o["median_cer"] < t["median_cer"]}
            summary.setdefault(variant, {})[split] = entry
        for system in systems:
            run = runs[variant][system]
            run["s_per_page"] = run["wall_s"] / max(1, run["pages"])
    return summary


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_report(rows: list[dict], runs: dict, summary: dict, systems: list[str], worst: int) -> None:
    for variant, by_split in summary.items():
        print(f"\n== {variant} ({DPI} DPI {'PNG' if variant == 'clean' else 'scan-like JPEG'}) ==")
        print(f"{'split':<9} {'system':<10} {'pages':>5} {'med CER':>8} {'pool CER':>8} {'med rec':>8} "
              f"{'med prec':>8} {'med ord':>8} {'rec<0.9':>7}")
        for split, entry in by_split.items():
            for system in systems:
                t = entry[system]
                print(f"{split:<9} {system:<10} {t['pages']:>5} {_fmt(t['median_cer'], '.3f'):>8} "
                      f"{t['pooled_cer']:>8.3f} {_fmt(t['median_recall'], '.3f'):>8} "
                      f"{_fmt(t['median_precision'], '.3f'):>8} {_fmt(t['median_order'], '.3f'):>8} "
                      f"{t['recall_below_0.9']:>7}")
        speed = {system: runs[variant][system] for system in systems}
        print("speed (wall, start-up included): " + "; ".join(
            f"{system} {run['s_per_page']:.2f} s/page ({run['wall_s']:.0f} s, {run['pages']} pages)"
            for system, run in speed.items())
            + (f"; ocrserve/tesseract {speed['ocrserve']['s_per_page'] / speed['tesseract']['s_per_page']:.2f}"
               if len(systems) == 2 else ""))
        if len(systems) < 2:
            continue
        for split, entry in by_split.items():
            met = entry["targets_met"]
            print(f"{split}: targets {'MET' if all(met.values()) else 'NOT MET'} "
                  f"({', '.join(f'{k}={v}' for k, v in met.items())}); ocrserve recall > {RECALL_MARGIN} below "
                  f"Tesseract's on {len(entry['recall_below_tesseract'])}: "
                  f"{' '.join(entry['recall_below_tesseract']) or 'none'}")
        of_variant = [row for row in rows if row["variant"] == variant]
        for title, key in (("highest ocrserve CER", lambda row: -row["ocrserve"]["cer"]),
                           ("ocrserve recall furthest below Tesseract's",
                            lambda row: row["ocrserve"]["recall"] - row["tesseract"]["recall"])):
            print(f"worst {min(worst, len(of_variant))} pages, {title}:")
            print(f"  {'page':<24} {'split':<8} {'what':<12} {'CER o/t':>13} {'recall o/t':>13} "
                  f"{'order o/t':>13} {'chars o/t':>11}")
            for row in sorted(of_variant, key=key)[:worst]:
                o, t = row["ocrserve"], row["tesseract"]
                print(f"  {row['name']:<24} {row['split']:<8} {row['what']:<12} {o['cer']:>6.3f}/{t['cer']:<6.3f} "
                      f"{o['recall']:>6.3f}/{t['recall']:<6.3f} {_fmt(o['order'], '6.3f')}/"
                      f"{_fmt(t['order'], '<6.3f')} {o['chars_ratio']:>5.2f}/{t['chars_ratio']:<5.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--install", action="store_true", help="apt-get install the packages holding the PDFs, "
                        "then stop (needs root)")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "real_pages", help="images and outputs")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "real_pages.json", help="JSON figures")
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--variants", default="clean,scan", help="comma-separated: clean,scan")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated: ocrserve,tesseract")
    parser.add_argument("--docs", default="", help="comma-separated document names (PDF stems, e.g. R-intro)")
    parser.add_argument("--max-pages", type=int, default=None, help="at most N pages of each document")
    parser.add_argument("--keep", action="store_true", help="reuse images already built in the work dir")
    parser.add_argument("--rescore", action="store_true", help="score the outputs already in the work dir; "
                        "run no system")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--worst", type=int, default=8, help="pages in each list of worst pages")
    args = parser.parse_args()
    variants = [v for v in VARIANTS if v in args.variants.split(",")]
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    if not variants or not systems:
        parser.error("--variants and --systems must each name at least one known value")

    pages, listing = load_pages(args.split, set(filter(None, args.docs.split(","))), args.max_pages)
    if args.install:
        install({doc["package"] for doc in listing["documents"]})
        return 0
    if not pages:
        parser.error("the selection holds no pages")
    print(f"{len(pages)} pages of {len({p.doc for p in pages})} documents "
          f"({sum(p.split == 'held_out' for p in pages)} held out); variants {','.join(variants)}; "
          f"systems {','.join(systems)}; work dir {args.work}", flush=True)
    build(pages, args.work, args.seed, args.keep or args.rescore)

    runners = {"ocrserve": run_ocrserve, "tesseract": run_tesseract}
    runs: dict = {}
    for index, variant in enumerate(variants):
        images = [args.work / variant / f"{page.name}{VARIANTS[variant]}" for page in pages]
        order = systems if index % 2 == 0 else systems[::-1]
        for system in order:
            out = args.work / "out" / variant / system
            if args.rescore:
                runs.setdefault(variant, {})[system] = json.loads((out / "run.json").read_text())
                continue
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            print(f"{variant}: {system} on {len(images)} images ...", flush=True)
            run = runners[system](images, out) | {"pages": len(images)}
            (out / "run.json").write_text(json.dumps(run))
            runs.setdefault(variant, {})[system] = run
            print(f"{variant}: {system} done in {run['wall_s']:.0f} s (exit {run['returncode']})", flush=True)

    rows = []
    for variant in variants:
        for page in pages:
            truth = (args.work / "truth" / f"{page.name}.txt").read_text()
            row = {"name": page.name, "doc": page.doc, "page": page.number, "what": page.what, "split": page.split,
                   "variant": variant}
            for system in systems:
                found = read_output(system, args.work / "out" / variant / system, page)
                row[system] = page_scores(found.pop("text"), truth) | found
            rows.append(row)
    summary = summarise(rows, runs, variants, systems)
    print_report(rows, runs, summary, systems, args.worst)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "runs": runs, "pages": rows, "dpi": DPI,
                                        "seed": args.seed, "work_dir": str(args.work),
                                        "held_out_rule": listing["held_out_rule"]}, indent=1))
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
