"""The house OCR model against Tesseract on held-out pages this script typesets.

    .venv/bin/python bench/house_ocr_eval.py --pages 12 --out artifacts/house_ocr_eval.json

Pages: single-column prose, two columns, tables, and prose around a table,
typeset with PyMuPDF in fonts the model never saw in training (the held-out
families of training/house_ocr/fonts.py), 8-12 pt, with text from a corpus it
never saw (the licence texts in /usr/share/common-licenses) and table cells
from a generator of its own. Every page exists twice, both as image-only PDFs
(no text layer, so no fallback can help either system):
- clean: rendered at 300 DPI;
- scan-like: rendered at 200 DPI, then rotated a little, blurred, noised,
  toned like paper and saved as JPEG.

Systems, run on the same files in one run:
- `house`: the full ocrserve page pipeline (render at the appliance's DPI,
  CDLA layout, PP-OCRv4 lines, crops, reading order) recognising with the house
  model on our engine over HTTP, as `ocrserve run` does;
- `tesseract (pipeline)`: the same pipeline recognising with Tesseract;
- `tesseract (page)`: plain `tesseract page.png - --psm 3` on the whole page
  rendered at 300 DPI, Tesseract's own layout analysis and its best resolution.

Scores: character error rate (edit distance / reference characters) and word
error rate over whitespace-normalised text in reading order, Markdown syntax
removed (table pipes, heading marks), pooled over pages; seconds per page
(wall, pipeline stages and recognition together; the engine runs in its own
process on the same cores), and CPU seconds per page over the same span: for
the pipeline systems this process, the Tesseract processes it waited for and
the engine process when this script started it; for whole-page Tesseract its
process (a system that leaves a core idle shows CPU below 2x its wall time).
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import psutil
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pymupdf as fitz  # noqa: E402
from rapidfuzz.distance import Levenshtein  # noqa: E402

from training.house_ocr import corpus, fonts  # noqa: E402

PAGE_W, PAGE_H = 595.0, 842.0   # A4 in points
MARGIN = 56.0
LAYOUTS = ("single", "two_column", "table", "mixed")
SYSTEMS = ("house", "tesseract_pipeline", "tesseract_page")


@dataclass
class TypesetPage:
    name: str
    layout: str
    font: str
    pdf: bytes          # vector PDF with its text (the source of both image versions)
    reference: str      # the text in reading order


# --------------------------------------------------------------------------------------------------
# typesetting

# Held-out families (regular, bold) by file name; fonts.py keeps them out of training.
HELD_OUT_FAMILIES = {
    "Linux Libertine": ("LinLibertine_R.otf", "LinLibertine_RB.otf"),
    "Linux Biolinum": ("LinBiolinum_R.otf", "LinBiolinum_RB.otf"),
    "Open Sans": ("OpenSans-Regular.ttf", "OpenSans-Bold.ttf"),
    "Roboto": ("Roboto-Regular.ttf", "Roboto-Bold.ttf"),
    "Lato": ("Lato-Regular.ttf", "Lato-Bold.ttf"),
    "EB Garamond": ("EBGaramond12-Regular.otf", "EBGaramond12-Bold.otf"),
    "Courier Prime": ("Courier Prime.otf", "Courier Prime Bold.otf"),
    "Noto Sans Mono": ("NotoSansMono-Regular.ttf", "NotoSansMono-Bold.ttf"),
}


def _families() -> dict[str, dict[str, str]]:
    """Held-out font families that are installed -> {'regular': path, 'bold': path}."""
    by_name = {Path(font.path).name: font.path for font in fonts.held_out_fonts()}
    return {family: {"regular": by_name[regular], "bold": by_name.get(bold, by_name[regular])}
            for family, (regular, bold) in HELD_OUT_FAMILIES.items() if regular in by_name}


def _place_paragraphs(page, rect: fitz.Rect, paragraphs: list[str], fontfile: str, size: float) -> list[str]:
    """Fill `rect` with whole paragraphs (the last one cut to fit); returns what was placed."""
    placed: list[str] = []
    y = rect.y0
    for text in paragraphs:
        words = text.split()
        while words:
            candidate = " ".join(words)
            box = fitz.Rect(rect.x0, y, rect.x1, rect.y1)
            if box.height < size * 1.5:
                return placed
            shape = page.new_shape()
            left = shape.insert_textbox(box, candidate, fontsize=size, fontname="body", fontfile=fontfile,
                                        lineheight=1.25)
            if left >= 0:
                shape.commit()
                placed.append(candidate)
                y = box.y1 - left + size * 0.8
                break
            words = words[:max(1, int(len(words) * 0.7))] if len(words) > 1 else []
        if y > rect.y1 - size * 2:
            break
    return placed


def _table_rows(rng: random.Random) -> list[list[str]]:
    words = [w.strip(".,;:()") for w in " ".join(corpus.licence_prose()[:200]).split() if w.isalpha() and len(w) > 3]
    header = rng.choice([["Item", "Code", "Date", "Qty", "Amount"], ["Name", "Ref.", "Issued", "Units", "Total"],
                         ["Description", "No.", "Due", "Hours", "Cost"]])
    rows = [header]
    for _ in range(rng.randint(6, 14)):
        rows.append([
            " ".join(rng.choice(words).capitalize() for _ in range(rng.randint(1, 2))),
            f"{rng.choice('ABCDEFGHKLMNPRSTUVWXZ')}{rng.choice('ABCDEFGHKLMNPRSTUVWXZ')}-{rng.randint(100, 99999)}",
            f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.{rng.randint(1990, 2030)}",
            str(rng.randint(1, 500)),
            f"{rng.uniform(1, 20000):,.2f}",
        ])
    return rows


def _place_table(page, top: float, rows: list[list[str]], fontfile: str, boldfile: str, size: float) -> tuple[
        float, list[str]]:
    widths = [0.34, 0.17, 0.17, 0.12, 0.20]
    usable = PAGE_W - 2 * MARGIN
    row_h = size * 2.0
    lines = []
    shape = page.new_shape()
    for r, row in enumerate(rows):
        y = top + r * row_h
        if y + row_h > PAGE_H - MARGIN:
            break
        x = MARGIN
        for c, cell in enumerate(row):
            w = widths[c] * usable
            font_path = boldfile if r == 0 else fontfile
            shape.insert_text((x + 4, y + row_h * 0.68), cell, fontsize=size, fontname="bold" if r == 0 else "body",
                              fontfile=font_path)
            x += w
        shape.draw_line((MARGIN, y + row_h), (PAGE_W - MARGIN, y + row_h))
        lines.append(" ".join(row))
    shape.draw_line((MARGIN, top), (PAGE_W - MARGIN, top))
    shape.finish(width=0.6, color=(0, 0, 0))
    shape.commit()
    return top + len(lines) * row_h + size, lines


def typeset(index: int, rng: random.Random, families: dict[str, dict[str, str]]) -> TypesetPage:
    layout = LAYOUTS[index % len(LAYOUTS)]
    family = list(families)[index % len(families)]
    regular = families[family]["regular"]
    bold = families[family].get("bold", regular)
    size = rng.choice([8.0, 9.0, 10.0, 10.0, 11.0, 12.0])
    prose = corpus.licence_prose()
    start = rng.randrange(len(prose))
    paragraphs = [prose[(start + i) % len(prose)] for i in range(40)]
    doc = fitz.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    reference: list[str] = []
    title = " ".join(paragraphs[0].split()[:rng.randint(3, 6)]).rstrip(".,;:")
    shape = page.new_shape()
    shape.insert_text((MARGIN, MARGIN + size * 1.6), title, fontsize=size * 1.6, fontname="bold", fontfile=bold)
    shape.commit()
    reference.append(title)
    top = MARGIN + size * 3.2
    body = fitz.Rect(MARGIN, top, PAGE_W - MARGIN, PAGE_H - MARGIN)
    if layout == "single":
        reference += _place_paragraphs(page, body, paragraphs[1:], regular, size)
    elif layout == "two_column":
        gap = 22.0
        mid = (body.x0 + body.x1) / 2
        left = _place_paragraphs(page, fitz.Rect(body.x0, top, mid - gap / 2, body.y1), paragraphs[1:], regular, size)
        rest = paragraphs[1 + len(left):]
        right = _place_paragraphs(page, fitz.Rect(mid + gap / 2, top, body.x1, body.y1), rest, regular, size)
        reference += left + right
    elif layout == "table":
        _, rows = _place_table(page, top, _table_rows(rng), regular, bold, size)
        reference += rows
    else:
        placed = _place_paragraphs(page, fitz.Rect(body.x0, top, body.x1, top + 160), paragraphs[1:3], regular, size)
        reference += placed
        y = top + 170
        y, rows = _place_table(page, y, _table_rows(rng)[:8], regular, bold, size)
        reference += rows
        reference += _place_paragraphs(page, fitz.Rect(body.x0, y + 10, body.x1, body.y1),
                                       paragraphs[3 + len(placed):], regular, size)
    pdf = doc.tobytes()
    doc.close()
    return TypesetPage(f"page{index + 1:02d}-{layout}", layout, family, pdf, "\n".join(reference))


# --------------------------------------------------------------------------------------------------
# image versions

def rasterise(pdf: bytes, dpi: int) -> np.ndarray:
    with fitz.open(stream=pdf, filetype="pdf") as doc:
        pix = doc[0].get_pixmap(dpi=dpi, colorspace=fitz.csRGB, alpha=False)
        return np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3).copy()


def scan_like(image: np.ndarray, rng: random.Random) -> np.ndarray:
    height, width = image.shape[:2]
    out = image.astype(np.float32)
    matrix = cv2.getRotationMatrix2D((width / 2, height / 2), rng.uniform(-0.8, 0.8), 1.0)
    out = cv2.warpAffine(out, matrix, (width, height), borderValue=(255, 255, 255))
    out = cv2.GaussianBlur(out, (0, 0), rng.uniform(0.5, 0.9))
    paper = np.array([rng.uniform(228, 245), rng.uniform(222, 238), rng.uniform(205, 225)], np.float32)
    ink = np.float32(rng.uniform(20, 60))
    out = ink + (paper - ink) * (out / 255.0)
    out += np.random.default_rng(rng.getrandbits(32)).normal(0, rng.uniform(5, 10), out.shape)
    out = np.clip(out, 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(out).save(buffer, format="JPEG", quality=rng.randint(45, 70))
    return np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))


def image_pdf(image: np.ndarray, path: Path, jpeg: bool) -> None:
    """An image-only PDF page of A4 size (what a scanner produces)."""
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="JPEG" if jpeg else "PNG", quality=92)
    doc = fitz.open()
    page = doc.new_page(width=PAGE_W, height=PAGE_H)
    page.insert_image(page.rect, stream=buffer.getvalue())
    doc.save(str(path))
    doc.close()


# --------------------------------------------------------------------------------------------------
# scoring

_SEPARATOR_ROW = re.compile(r"^\s*\|?\s*:?-{3,}.*$")


def normalise(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if _SEPARATOR_ROW.match(line):
            continue
        line = re.sub(r"^#+\s+", "", line.strip())
        line = line.replace("|", " ").replace("$$", " ")
        lines.append(line)
    return " ".join(" ".join(lines).split())


def errors(hypothesis: str, reference: str) -> tuple[int, int, int, int]:
    hyp, ref = normalise(hypothesis), normalise(reference)
    return (Levenshtein.distance(hyp, ref), len(ref), Levenshtein.distance(hyp.split(), ref.split()),
            len(ref.split()))


# --------------------------------------------------------------------------------------------------
# systems

def page_text(result) -> str:
    """The pipeline's text in reading order (the text writer's view of the regions)."""
    return "\n".join(region.text for region in sorted(result.regions, key=lambda r: r.reading_index) if region.text)


def run_pipeline(pipeline, path: Path, dpi: float, engine_process) -> tuple[str, float, float, int]:
    """-> text, wall seconds, CPU seconds, regions not ok."""
    from vision.document import Document

    cpu_before, started = cpu_seconds(engine_process), time.perf_counter()
    with Document.open_path(path) as document:
        result = pipeline.process(document, document.render_page(0, dpi), 0)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds(engine_process) - cpu_before
    not_ok = sum(region.status.value != "ok" for region in result.regions)
    return page_text(result), elapsed, cpu, not_ok


def run_tesseract_page(path: Path) -> tuple[str, float, float, int]:
    """-> text, wall seconds, CPU seconds of the tesseract process, 0."""
    image = rasterise(path.read_bytes(), 300)
    with tempfile.TemporaryDirectory() as tmp:
        png = Path(tmp) / "page.png"
        Image.fromarray(image).save(png)
        cpu_before, started = cpu_seconds(None, own=False), time.perf_counter()
        out = subprocess.run(["tesseract", str(png), "-", "--psm", "3", "-l", "eng"], capture_output=True, text=True,
                             check=True)
        return out.stdout, time.perf_counter() - started, cpu_seconds(None, own=False) - cpu_before, 0


def cpu_seconds(engine_process, own: bool = True) -> float:
    """CPU seconds so far of the children this process waited for, of this process (`own`),
    and of the engine process."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = children.ru_utime + children.ru_stime
    if own:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        total += usage.ru_utime + usage.ru_stime
    if engine_process is not None:
        times = engine_process.cpu_times()
        total += times.user + times.system
    return total


def _draft_counts(base_url: str) -> dict[str, float]:
    """Drafted and accepted speculative tokens from the engine's /metrics."""
    import httpx

    try:
        text = httpx.get(base_url.removesuffix("/v1") + "/metrics", timeout=10).text
    except httpx.HTTPError:
        return {}
    found = dict(re.findall(r"^(ocrserve_spec_\w+_total(?:\{[^}]*\})?) ([0-9.e+]+)$", text, re.M))
    return {"drafted": float(found.get("ocrserve_spec_draft_tokens_total", 0)),
            "accepted": float(found.get("ocrserve_spec_accepted_tokens_total", 0)),
            "rescored_kept_decoder": float(found.get('ocrserve_spec_rescored_lines_total{kept="decoder"}', 0)),
            "rescored_kept_draft": float(found.get('ocrserve_spec_rescored_lines_total{kept="draft"}', 0))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=12, help="pages per version (clean and scan-like)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engine-url", default=None, help="an engine already serving house-ocr (default: start one)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated PDFs and outputs here")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--only", default="", help="comma-separated page names (or prefixes, e.g. page06) to run; "
                        "the others are still typeset so every page is the same as in a full run")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    args = parser.parse_args()
    systems = tuple(s for s in SYSTEMS if s in args.systems.split(","))
    if not systems:
        parser.error(f"--systems must name at least one of {', '.join(SYSTEMS)}")

    from app.local_services import child_env, start_engine
    from workers.page_pipeline import PagePipeline
    from workers.recognizers.registry import build_recognizer
    from workers.settings import Settings

    rng = random.Random(args.seed)
    families = _families()
    pages = [typeset(i, rng, families) for i in range(args.pages)]
    work = Path(tempfile.mkdtemp(prefix="ocrserve-house-eval-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    files: list[tuple[TypesetPage, str, Path]] = []
    for page in pages:
        clean = work / f"{page.name}-clean.pdf"
        image_pdf(rasterise(page.pdf, 300), clean, jpeg=False)
        scan = work / f"{page.name}-scan.pdf"
        image_pdf(scan_like(rasterise(page.pdf, 200), rng), scan, jpeg=True)
        (work / f"{page.name}.reference.txt").write_text(page.reference)
        if not args.only or any(page.name.startswith(name) for name in args.only.split(",")):
            files += [(page, "clean", clean), (page, "scan", scan)]
    if not files:
        parser.error(f"--only {args.only!r} names none of the pages")

    settings = Settings(data_dir=work, recognizer="house", vision_num_threads=args.threads)
    engine = engine_process = None
    if args.engine_url is None:
        engine, url = start_engine(settings, child_env(settings), 0, work / "engine.log",
                                   extra_args=("--num-threads", str(args.threads)))
        engine_process = psutil.Process(engine.popen.pid)
        settings = settings.model_copy(update={"engine_url": url})
    else:
        settings = settings.model_copy(update={"engine_url": args.engine_url})
    try:
        house = PagePipeline(build_recognizer(settings), args.threads)
        house.recognizer.check()
        tesseract = PagePipeline(build_recognizer(settings.model_copy(update={"recognizer": "tesseract"})),
                                 args.threads)
        dpi = settings.render_dpi
        # warm-up (model loads), not counted
        if "house" in systems:
            run_pipeline(house, files[0][2], dpi, engine_process)
        if "tesseract_pipeline" in systems:
            run_pipeline(tesseract, files[0][2], dpi, engine_process)

        rows = []
        for page, version, path in files:
            record = {"page": page.name, "layout": page.layout, "font": page.font, "version": version}
            runners = {"house": lambda p: run_pipeline(house, p, dpi, engine_process),
                       "tesseract_pipeline": lambda p: run_pipeline(tesseract, p, dpi, engine_process),
                       "tesseract_page": run_tesseract_page}
            for system in systems:
                text, seconds, cpu, not_ok = runners[system](path)
                (work / f"{page.name}-{version}.{system}.txt").write_text(text)
                record[system] = {"errors": errors(text, page.reference), "seconds": seconds, "cpu_seconds": cpu,
                                  "regions_not_ok": not_ok}
            rows.append(record)
            print(f"{page.name:<22} {version:<6} " + "  ".join(
                f"{s}: CER {r['errors'][0] / max(1, r['errors'][1]):.3f} {r['seconds']:.1f}s"
                for s, r in ((s, record[s]) for s in systems)), flush=True)
        spec = _draft_counts(settings.engine_base_url)
    finally:
        if engine is not None:
            engine.stop()

    summary = {}
    for version in ("clean", "scan"):
        for system in systems:
            chosen = [r[system] for r in rows if r["version"] == version]
            ce, cn, we, wn = (sum(c["errors"][i] for c in chosen) for i in range(4))
            summary[f"{version}/{system}"] = {
                "cer": ce / max(1, cn), "wer": we / max(1, wn),
                "seconds_per_page": statistics.fmean(c["seconds"] for c in chosen),
                "cpu_seconds_per_page": statistics.fmean(c["cpu_seconds"] for c in chosen),
                "regions_not_ok": sum(c["regions_not_ok"] for c in chosen), "pages": len(chosen)}
    names = {"house": "house model (pipeline)", "tesseract_pipeline": "Tesseract (pipeline)",
             "tesseract_page": "Tesseract (whole page, 300 DPI)"}
    print(f"\n{args.pages} held-out pages per version, seed {args.seed}, {args.threads} threads, "
          f"pipeline at {settings.render_dpi:g} DPI")
    print(f"{'set':<6} {'system':<32} {'CER':>7} {'WER':>7} {'s/page':>7} {'CPU s/page':>11}")
    for key, value in summary.items():
        version, system = key.split("/")
        cpu = f"{value['cpu_seconds_per_page']:>11.2f}" if engine_process is not None or system != "house" \
            else f"{'(engine ext.)':>11}"
        print(f"{version:<6} {names[system]:<32} {value['cer']:>7.2%} {value['wer']:>7.2%} "
              f"{value['seconds_per_page']:>7.2f} {cpu}")
    for version in ("clean", "scan"):
        if len(systems) < len(SYSTEMS):
            break
        h, t = summary[f"{version}/house"], summary[f"{version}/tesseract_pipeline"]
        p = summary[f"{version}/tesseract_page"]
        print(f"{version}: house CER / Tesseract-pipeline CER = {h['cer'] / max(t['cer'], 1e-9):.2f}, "
              f"/ Tesseract-page CER = {h['cer'] / max(p['cer'], 1e-9):.2f}; house s/page / Tesseract-pipeline "
              f"s/page = {h['seconds_per_page'] / t['seconds_per_page']:.2f}, / Tesseract-page = "
              f"{h['seconds_per_page'] / p['seconds_per_page']:.2f}")
    if spec:
        print(f"speculative decoding (house): {spec['accepted']:.0f} of {spec['drafted']:.0f} drafted tokens "
              f"accepted ({spec['accepted'] / max(spec['drafted'], 1):.1%}); lines rescored against the draft: "
              f"{spec['rescored_kept_draft'] + spec['rescored_kept_decoder']:.0f}, the draft kept for "
              f"{spec['rescored_kept_draft']:.0f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "pages": rows, "seed": args.seed, "speculative": spec,
                                        "threads": args.threads, "work_dir": str(work)}, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_THREAD_LIMIT", "2")
    sys.exit(main())
