"""ocrserve against Tesseract with the right language packs, per language, on real pages.

    sudo .venv/bin/python bench/multilingual.py --install   # once: the documents, the language packs
    .venv/bin/python bench/multilingual.py --out artifacts/multilingual.json

Pages: `bench/multilingual_pages.json`, two body pages from each of ten documents in ten
languages and six scripts (Latin: German, French, Vietnamese, Polish, Czech; Cyrillic: Russian;
Greek; Arabic; Han: Simplified Chinese; Japanese), translated Debian manuals and TeX Live
language documentation, fixed before any run. `--install` fetches each document's package with
`apt-get download` and unpacks it under artifacts/multilingual/root/ (nothing is installed;
texlive-lang-greek alone would pull in a TeX system), and apt-get installs the Tesseract packs
the list names. Truth: each PDF page's own text layer, line by line, with a space where a line's
glyphs stand a word space apart (`layer_text`: some PDFs set word spaces as gaps, not characters).

Systems, each given what serves it best (as bench/real_pages.py does):
- `ocrserve`: one `ocrserve run` over the one-page PDFs, `--text-layer never --keep-furniture`,
  `--languages detect` (the default: nothing tells it the language);
- `tesseract`: `tesseract PAGE.png OUT --psm 3 -l LANG` on the page rendered at 300 DPI, LANG the
  list's pack for the language; `tesseract_eng`: the same with `LANG+eng` (the documents quote
  English commands). Two single-threaded processes at once.

Scores (bench/real_pages_metrics.py's normalisation, after joining words hyphenated at a line
end in every script, `joined_hyphens`, for truth and outputs alike): per page word recall, and for languages
written without spaces (Chinese, Japanese) and Korean character recall: the multiset intersection of the
output's and the truth's non-space characters over the truth's. Per language the pooled recall
of its pages. Target (issue 34): per language, ocrserve's recall at least the better Tesseract's,
and no language at zero.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymupdf
from PIL import Image

from real_pages import BEST_DPI, _cpu_children, _render   # bench/ is on sys.path when this file runs
from real_pages_metrics import normalise, page_scores

ROOT = Path(__file__).resolve().parent.parent
PAGE_LIST = ROOT / "bench" / "multilingual_pages.json"
DOCS_ROOT = ROOT / "artifacts" / "multilingual" / "root"
UNSPACED = {"zh", "ja", "ko"}   # ko by characters too, fixed when its layer seemed to have no word spaces (`layer_text` finds them)
SYSTEMS = ("ocrserve", "tesseract", "tesseract_eng")


def load_pages(languages: set[str], page_list: Path = PAGE_LIST) -> list[dict]:
    listing = json.loads(page_list.read_text())
    return [{**doc, "page": entry["page"], "what": entry["what"],
             "name": f"{doc['language']}_{Path(doc['path']).stem}_p{entry['page']:03d}"}
            for doc in listing["documents"] if not languages or doc["language"] in languages
            for entry in doc["pages"]]


def install(page_list: Path = PAGE_LIST) -> None:
    """Download and unpack the documents' packages; apt-get install the missing Tesseract packs."""
    documents = json.loads(page_list.read_text())["documents"]
    debs = DOCS_ROOT.parent / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    for package in sorted({doc["package"] for doc in documents}):
        if not list(debs.glob(f"{package}_*.deb")):
            subprocess.run(["apt-get", "download", package], cwd=debs, check=True)
        [deb] = debs.glob(f"{package}_*.deb")
        subprocess.run(["dpkg-deb", "-x", str(deb), str(DOCS_ROOT)], check=True)
    for doc in documents:   # some packages ship their PDF gzipped
        pdf = DOCS_ROOT / doc["path"]
        if not pdf.exists() and pdf.with_name(pdf.name + ".gz").exists():
            subprocess.run(["gunzip", "-k", str(pdf.with_name(pdf.name + ".gz"))], check=True)
    packs = sorted({f"tesseract-ocr-{code.replace('_', '-')}" for doc in documents for code in
                    doc["tesseract"].split("+")} | {"tesseract-ocr-eng", "tesseract-ocr-osd"})
    missing = [name for name in packs if subprocess.run(["dpkg-query", "-W", "-f=${Status}", name],
                                                        capture_output=True, text=True).stdout != "install ok installed"]
    if missing:
        if os.geteuid() != 0:
            sys.exit(f"--install needs root for the language packs: {' '.join(missing)}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], check=True, env=env)
    print("documents under", DOCS_ROOT, "; packs:", " ".join(packs))


GAP_EM = 0.2   # a gap this wide between two glyphs of a line (in ems of the font) is a word space


def layer_text(page: pymupdf.Page) -> str:
    """The page's text layer, line by line, with a space wherever the page shows one. A PDF may
    set a word space as a gap with no space character: the Vietnamese guide does after a letter
    with stacked accents ('sự phát' is 'sựphát' in `get_text()`), and the lines of the Korean lshort
    have none between words at all. Such a gap (`GAP_EM` of the font size or more) becomes a space."""
    lines = []
    for block in page.get_text("rawdict")["blocks"]:
        for line in block.get("lines", ()):
            text, previous = [], None
            for span in line["spans"]:
                for char in span["chars"]:
                    if (previous is not None and not char["c"].isspace() and not previous["c"].isspace()
                            and char["bbox"][0] - previous["bbox"][2] >= GAP_EM * span["size"]):
                        text.append(" ")
                    text.append(char["c"])
                    previous = char
            lines.append("".join(text))
    return "\n".join(lines) + "\n"


def build(pages: list[dict], work: Path) -> None:
    for folder in ("pdf", "png300", "truth"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    for page in pages:
        pdf = DOCS_ROOT / page["path"]
        if not pdf.exists():
            sys.exit(f"{pdf} is missing: run with --install (package {page['package']})")
        with pymupdf.open(pdf) as document:
            pdf_page = document[page["page"] - 1]
            (work / "truth" / f"{page['name']}.txt").write_text(layer_text(pdf_page))
            with pymupdf.open() as single:
                single.insert_pdf(document, from_page=page["page"] - 1, to_page=page["page"] - 1)
                single.save(work / "pdf" / f"{page['name']}.pdf")
            Image.fromarray(_render(pdf_page, BEST_DPI)).save(work / "png300" / f"{page['name']}.png",
                                                             dpi=(BEST_DPI, BEST_DPI))


def run_ocrserve(pages: list[dict], work: Path, out: Path, languages: str) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "ocrserve"), "run",
               *(str(work / "pdf" / f"{page['name']}.pdf") for page in pages), "--out", str(out),
               "--formats", "txt,json", "--force", "--quiet", "--text-layer", "never", "--keep-furniture",
               "--languages", languages]
    started, cpu = time.perf_counter(), _cpu_children()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu, "returncode": code}


def run_tesseract(pages: list[dict], work: Path, out: Path, with_eng: bool) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def one(page: dict) -> int:
        lang = page["tesseract"] + ("+eng" if with_eng and page["tesseract"] != "eng" else "")
        return subprocess.run(["tesseract", str(work / "png300" / f"{page['name']}.png"), str(out / page["name"]),
                               "--psm", "3", "-l", lang], capture_output=True, env=env).returncode

    started, cpu = time.perf_counter(), _cpu_children()
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(one, pages))
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu, "returncode": max(codes, default=0)}


def char_counts(text: str) -> Counter[str]:
    return Counter(char for char in normalise(text) if not char.isspace())


_HYPHEN_BREAK = re.compile(r"([^\W\d_])-[ \t]*\n[ \t]*([^\W\d_])")


def joined_hyphens(text: str) -> str:
    """A word hyphenated at a line end joined back in any script ('па-\nкеты' -> 'пакеты'):
    real_pages_metrics joins only before a-z, so a Cyrillic or Greek truth would keep the halves
    and count a reader that joins them (ocrserve's paragraphs do) as missing two words."""
    return _HYPHEN_BREAK.sub(lambda m: m.group(1) + m.group(2) if m.group(2).islower() else m.group(0), text)


def scores(output: str, truth: str, unspaced: bool) -> dict:
    output, truth = joined_hyphens(output), joined_hyphens(truth)
    scored = page_scores(output, truth)
    if unspaced:   # words are not separated: recall of characters
        truth_chars, out_chars = char_counts(truth), char_counts(output)
        common = sum((truth_chars & out_chars).values())
        scored |= {"recall": common / max(1, sum(truth_chars.values())), "truth_units": sum(truth_chars.values()),
                   "found_units": common, "unit": "char"}
    else:
        scored |= {"truth_units": scored["truth_words"], "found_units": round(scored["recall"] * scored["truth_words"]),
                   "unit": "word"}
    return scored


def line_scripts(out: Path, name: str) -> dict[str, int]:
    """How many of ocrserve's lines on the page say each script, and each language."""
    result = out / f"{name}.json"
    if not result.exists():
        return {}
    found: Counter[str] = Counter()
    for region in json.loads(result.read_text())["documents"][0]["pages"][0]["regions"]:
        for line in region.get("lines", ()):
            found[f"{line.get('script')}/{line.get('language')}"] += 1
    return dict(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", action="store_true", help="fetch the documents and language packs, then stop")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "multilingual" / "work")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "multilingual.json")
    parser.add_argument("--pages", type=Path, default=PAGE_LIST,
                        help="the page list (default: bench/multilingual_pages.json; "
                             "bench/multilingual_pages_validation.json holds other pages of the same documents)")
    parser.add_argument("--languages", default="", help="comma-separated language codes of the list (default: all)")
    parser.add_argument("--ocrserve-languages", default="detect", help="ocrserve's --languages (default: detect)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="the systems scored")
    parser.add_argument("--reuse", default="", help="systems not run again: their outputs in --work and timings in "
                                                   "--out from an earlier run are scored (e.g. tesseract,tesseract_eng)")
    args = parser.parse_args()
    if args.install:
        install(args.pages)
        return 0
    pages = load_pages({code for code in args.languages.split(",") if code}, args.pages)
    build(pages, args.work)
    runs = {}
    reused = {system for system in args.reuse.split(",") if system}
    earlier = json.loads(args.out.read_text())["runs"] if reused and args.out.exists() else {}
    for system in args.systems.split(","):
        out = args.work / f"out_{system}"
        if system in reused:
            missing = [page["name"] for page in pages if not (out / f"{page['name']}.txt").exists()]
            if missing:   # scored as empty they would read as a reader that found nothing
                print(f"--reuse {system}: no earlier output for {', '.join(missing)}; run those languages "
                      f"without --reuse first", file=sys.stderr)
                return 2
            runs[system] = {**earlier.get(system, {}), "reused": True}
            continue
        runs[system] = (run_ocrserve(pages, args.work, out, args.ocrserve_languages) if system == "ocrserve"
                        else run_tesseract(pages, args.work, out, with_eng=system == "tesseract_eng"))
        print(f"{system}: {runs[system]['wall_s']:.0f} s wall, {runs[system]['cpu_s']:.0f} s CPU", flush=True)
    rows = []
    for page in pages:
        truth = (args.work / "truth" / f"{page['name']}.txt").read_text()
        row = {"name": page["name"], "language": page["language"], "script": page["script"]}
        for system in runs:
            text_file = args.work / f"out_{system}" / f"{page['name']}.txt"
            output = text_file.read_text() if text_file.exists() else ""
            row[system] = scores(output, truth, page["language"] in UNSPACED)
        row["ocrserve_lines"] = line_scripts(args.work / "out_ocrserve", page["name"]) if "ocrserve" in runs else {}
        rows.append(row)
    summary = summarise(rows, list(runs))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs, "per_language": summary, "pages": rows}, indent=1, ensure_ascii=False))
    print_table(summary, list(runs))
    return 0


def summarise(rows: list[dict], systems: list[str]) -> dict:
    summary: dict[str, dict] = {}
    for language in dict.fromkeys(row["language"] for row in rows):
        mine = [row for row in rows if row["language"] == language]
        entry: dict = {"script": mine[0]["script"], "pages": len(mine), "unit": mine[0][systems[0]]["unit"]}
        for system in systems:
            truth = sum(row[system]["truth_units"] for row in mine)
            entry[system] = {"recall": sum(row[system]["found_units"] for row in mine) / max(1, truth),
                             "median_cer": sorted(row[system]["cer"] for row in mine)[len(mine) // 2]}
        if "ocrserve" in systems and len(systems) > 1:
            best = max(entry[s]["recall"] for s in systems if s != "ocrserve")
            entry["meets_target"] = entry["ocrserve"]["recall"] >= best and entry["ocrserve"]["recall"] > 0
        summary[language] = entry
    return summary


def print_table(summary: dict, systems: list[str]) -> None:
    print(f"\n{'lang':5} {'script':9} {'unit':5} " + " ".join(f"{s + ' recall':>21}" for s in systems)
          + " " + " ".join(f"{s[:9] + ' CER':>14}" for s in systems) + "  target")
    for language, entry in summary.items():
        print(f"{language:5} {entry['script']:9} {entry['unit']:5} "
              + " ".join(f"{entry[s]['recall']:21.3f}" for s in systems) + " "
              + " ".join(f"{entry[s]['median_cer']:14.3f}" for s in systems)
              + f"  {'met' if entry.get('meets_target') else 'MISSED' if 'meets_target' in entry else '-'}")


if __name__ == "__main__":
    sys.exit(main())
