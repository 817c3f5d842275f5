"""Fact tests of ocrserve and Tesseract at its best on pages of real documents, in one run.

    nice -n 10 .venv/bin/python bench/facts/run.py --out artifacts/facts.json > artifacts/facts.log 2>&1 &
    .venv/bin/python bench/facts/run.py --reuse artifacts/facts/out    # score outputs already made

Facts (bench/facts/pages/*.json, see fact_files.py) were written from the PDFs' text layers,
their TeX sources and the page images, never from a system's output. Categories: present
(text that must be in the output), absent (page furniture: running headers, footers, page
numbers), order (one text before another), table (a cell and its neighbours in an output
table), math (a formula that must render like the page's; math_render.py).

Systems, on the same pages in the same run:
- `ocrserve`: `ocrserve run PDFS --out DIR --formats md,txt,json --force --quiet`, defaults
  otherwise, as a new user runs it (text layer `auto`, furniture as the default leaves it); text
  facts read NAME.txt, table and math facts NAME.md. By default each document's fact pages go
  as one PDF, in page order (a user sends the document, not its pages one by one, and running
  headers are known by repeating across pages); its outputs are split back into pages (the text's
  form feeds, the Markdown's page markers). `--one-page-pdfs` sends every page as its own PDF;
- `tesseract`: `tesseract PNG OUT --psm 3 -l eng` on the page rendered at 300 DPI (as
  bench/real_pages.py gives it its best); every fact reads its plain text.
Prints passed/total per category x split for both systems and the worst failures; writes JSON.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from checks import TEXT_CHECKS, check_table  # noqa: E402
from fact_files import CATEGORIES, FACTS_DIR, SPLITS, load_facts  # noqa: E402
from math_render import KatexRenderer, check_math  # noqa: E402
from real_pages import build, run_tesseract  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SYSTEMS = ("ocrserve", "tesseract")


def run_ocrserve(inputs: list[Path], out: Path) -> dict:
    import subprocess

    command = [str(Path(sys.executable).parent / "ocrserve"), "run", *map(str, inputs), "--out", str(out),
               "--formats", "md,txt,json", "--force", "--quiet"]
    started = time.perf_counter()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    return {"wall_s": time.perf_counter() - started, "returncode": code}


def document_pdfs(ordered: list, work: Path) -> dict[str, list]:
    """One PDF per document of its fact pages, in page order: {pdf name: pages}."""
    import pymupdf

    groups: dict[str, list] = {}
    for page in sorted(ordered, key=lambda page: (page.doc, page.number)):
        groups.setdefault(page.doc, []).append(page)
    (work / "documents").mkdir(parents=True, exist_ok=True)
    for doc, pages in groups.items():
        with pymupdf.open() as joined:
            for page in pages:
                joined.insert_pdf(pymupdf.open(work / "pdf" / f"{page.name}.pdf"))
            joined.save(work / "documents" / f"{doc}.pdf")
    return groups


def split_outputs(out: Path, groups: dict[str, list]) -> None:
    """NAME.txt and NAME.md per page from each document's outputs: text pages end at form feeds,
    Markdown pages start at `<!-- page N -->`."""
    import re

    for doc, pages in groups.items():
        text_file, markdown_file = out / f"{doc}.txt", out / f"{doc}.md"
        texts = text_file.read_text().split("\f") if text_file.exists() else []
        markdown = markdown_file.read_text() if markdown_file.exists() else ""
        parts = re.split(r"^<!-- page \d+ -->\n", markdown, flags=re.MULTILINE)[1:]
        for k, page in enumerate(pages):
            (out / f"{page.name}.txt").write_text(texts[k] if k < len(texts) else "")
            (out / f"{page.name}.md").write_text(parts[k] if k < len(parts) else "")


def outputs(system: str, out: Path, name: str) -> tuple[str, str]:
    """(text, markdown) of a page; Tesseract's plain text is both."""
    text_file = out / f"{name}.txt"
    text = text_file.read_text() if text_file.exists() else ""
    markdown_file = out / f"{name}.md"
    markdown = markdown_file.read_text() if system == "ocrserve" and markdown_file.exists() else text
    return text, markdown


def describe(fact: dict) -> str:
    """The fact in a few words, for the list of failures."""
    if fact["category"] == "order":
        return f"{fact['before'][:30]!r} < {fact['after'][:30]!r}"
    if fact["category"] == "table":
        return f"{fact['cell'][:24]!r} " + " ".join(f"{k}={fact[k][:16]!r}" for k in ("up", "down", "left", "right")
                                                   if k in fact)
    return repr((fact.get("text") or fact.get("latex"))[:60])


def score(facts: list[dict], pages: dict, outs: dict[str, Path], renderer: KatexRenderer | None) -> list[dict]:
    rows = []
    for fact in facts:
        name = pages[(fact["document"], fact["page"])].name
        row = {key: fact[key] for key in ("id", "document", "page", "split", "category")}
        row["what"] = describe(fact)
        for system, out in outs.items():
            text, markdown = outputs(system, out, name)
            if fact["category"] == "math":
                result = check_math(fact, markdown, renderer)
            elif fact["category"] == "table":
                result = {"passed": check_table(fact, markdown)}
            else:
                result = {"passed": TEXT_CHECKS[fact["category"]](fact, text)}
            row[system] = result
        rows.append(row)
    return rows


def summarise(rows: list[dict]) -> dict:
    summary: dict = {}
    for category in (*CATEGORIES, "all"):
        for split in (*SPLITS, "all"):
            chosen = [row for row in rows if category in (row["category"], "all") and split in (row["split"], "all")]
            if chosen:
                summary.setdefault(category, {})[split] = {
                    "facts": len(chosen), **{system: sum(row[system]["passed"] for row in chosen)
                                             for system in SYSTEMS if system in chosen[0]}}
    return summary


def print_report(summary: dict, rows: list[dict], worst: int) -> None:
    print(f"\n{'category':<9} {'split':<9} {'facts':>5} {'ocrserve':>14} {'tesseract':>14}")
    for category, by_split in summary.items():
        for split, entry in by_split.items():
            cells = [f"{entry[s]:>4} ({entry[s] / entry['facts']:>4.0%})" if s in entry else "-" for s in SYSTEMS]
            print(f"{category:<9} {split:<9} {entry['facts']:>5} {cells[0]:>14} {cells[1]:>14}")
    failed = [row for row in rows if not row["ocrserve"]["passed"]]
    failed.sort(key=lambda row: (not row.get("tesseract", {}).get("passed"), row["category"]))
    print(f"\nocrserve fails {len(failed)} facts; the first {min(worst, len(failed))}, those Tesseract passes first:")
    for row in failed[:worst]:
        print(f"  {row['id']:<36} {row['split']:<8} tesseract "
              f"{'pass' if row.get('tesseract', {}).get('passed') else 'fail'}  {row['what']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=Path, default=FACTS_DIR, help="folder of fact files")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "facts", help="inputs and outputs")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="score the outputs in REUSE/ocrserve and REUSE/tesseract; run no system")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated: " + ",".join(SYSTEMS))
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "facts.json", help="JSON results")
    parser.add_argument("--worst", type=int, default=25, help="failures to list")
    parser.add_argument("--one-page-pdfs", action="store_true",
                        help="give ocrserve every page as its own PDF (default: each document's pages as one)")
    parser.add_argument("--no-math-render", action="store_true",
                        help="math facts by LaTeX equality only (no browser)")
    args = parser.parse_args()
    systems = [s for s in SYSTEMS if s in args.systems.split(",")]
    if not systems:
        parser.error("--systems names no known system")

    facts, pages = load_facts(args.facts)
    ordered = list(pages.values())
    print(f"{len(facts)} facts on {len(ordered)} pages of {len({p.doc for p in ordered})} documents "
          f"({sum(f['split'] == 'held_out' for f in facts)} held-out facts)", flush=True)
    outs, runs = {}, {}
    for system in systems:
        if args.reuse:
            outs[system] = args.reuse / system
            continue
        if not runs:
            build(ordered, args.work, ["clean"], seed=17, scale=1.5, keep=True)
        out = args.work / "out" / system
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        groups = None
        if system == "ocrserve" and args.one_page_pdfs:
            inputs = [args.work / "pdf" / f"{page.name}.pdf" for page in ordered]
        elif system == "ocrserve":
            groups = document_pdfs(ordered, args.work)
            inputs = [args.work / "documents" / f"{doc}.pdf" for doc in groups]
        else:
            inputs = [args.work / "clean300" / f"{page.name}.png" for page in ordered]
        print(f"{system} on {len(inputs)} pages ...", flush=True)
        runner = run_ocrserve if system == "ocrserve" else run_tesseract
        runs[system] = runner(inputs, out) | {"pages": len(ordered), "inputs": len(inputs)}
        if groups is not None:
            split_outputs(out, groups)
        print(f"{system} done in {runs[system]['wall_s']:.0f} s (exit {runs[system]['returncode']})", flush=True)
        outs[system] = out

    renderer = None if args.no_math_render else KatexRenderer(Path(tempfile.mkdtemp(prefix="facts-katex-")))
    try:
        rows = score(facts, pages, outs, renderer)
    finally:
        if renderer:
            renderer.close()
    summary = summarise(rows)
    print_report(summary, rows, args.worst)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"summary": summary, "runs": runs, "facts": rows,
                                        "outputs": {s: str(p) for s, p in outs.items()}}, indent=1))
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
