"""Lines in another script on English pages: ocrserve against Tesseract, on pages made here.

    .venv/bin/python bench/minority_scripts.py --out artifacts/minority_scripts.json

A bibliography with a Russian title, a Greek motto, a line of Chinese in a report: the page is
English and a few of its lines are not. Nothing tells ocrserve (`--languages detect`, the
default); its router reads the page as Latin and asks about the lines the house model read
unsurely (`workers.recognizers.routing._minority_lines`).

Pages: for each of seven languages (Russian, Ukrainian, Bulgarian, Greek, Simplified Chinese,
Japanese, Korean) `--pages` pages of 16 English lines with 3 lines of the language put among them at
seeded places. The text is the software's own: English message strings and their translations
from the gettext catalogs Debian packages install under /usr/share/locale (apt, coreutils,
glib, GTK...; no evaluation here uses them, and no ocrserve training text comes from them).
English lines are set in DejaVu Serif, Cyrillic and Greek in the same font, Chinese,
Japanese and Korean in PyMuPDF's own CJK fonts, 11 pt on A4.

Variants, each system given what serves it best (as bench/real_pages.py does):
- clean: ocrserve gets the one-page PDF (`--text-layer never`); Tesseract the page at 300 DPI;
- scan: the 150-DPI scan-like JPEG of bench/house_ocr_eval.py (`scan_like`); Tesseract the same
  image upscaled 1.5x.
Systems: `ocrserve`; `tesseract` (`-l eng`, what a user of an English document runs);
`tesseract_packs` (`-l eng+PACK`, a user who knows which script the page quotes).

Scores per page: recall of the foreign lines' words (characters for Chinese and Japanese:
multiset intersection of non-space characters) in the page's whole output, and recall of the
English lines' words, bench/real_pages_metrics.py's normalisation; pooled per language.
"""
from __future__ import annotations

import argparse
import gettext
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pymupdf
from PIL import Image

from house_ocr_eval import scan_like                     # bench/ is on sys.path when this file runs
from real_pages import BEST_DPI, DPI, _cpu_children, _render, run_ocrserve, upscale
from real_pages_metrics import normalise, words

ROOT = Path(__file__).resolve().parent.parent
LOCALE = Path("/usr/share/locale")
CATALOGS = ("apt", "libapt-pkg6.0", "coreutils", "glib20", "gtk30", "gtk20", "dpkg", "tar", "grep", "findutils",
            "diffutils", "bash", "sed", "wget", "gettext-tools", "shadow", "systemd", "gnupg2", "libc", "make")
# language -> (locale folder, script, Tesseract pack, PyMuPDF font name or None for DejaVu Serif)
LANGUAGES = {"ru": ("ru", "Cyrillic", "rus", None), "uk": ("uk", "Cyrillic", "ukr", None),
             "bg": ("bg", "Cyrillic", "bul", None), "el": ("el", "Greek", "ell", None),
             "zh": ("zh_CN", "Han", "chi_sim", "china-s"), "ja": ("ja", "Japanese", "jpn", "japan"),
             "ko": ("ko", "Hangul", "kor", "korea")}
UNSPACED = {"zh", "ja"}
SERIF = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"
ENGLISH_LINES, FOREIGN_LINES = 16, 3
SYSTEMS = ("ocrserve", "tesseract", "tesseract_packs")
_MARKUP = re.compile(r"[%{}<>&_\\\n\t|$@#*]|\.\.\.|\s\s")


def _strings(code: str) -> list[tuple[str, str]]:
    """(English, translation) pairs of plain sentences from the catalogs of one locale."""
    pairs = []
    for name in CATALOGS:
        path = LOCALE / code / "LC_MESSAGES" / f"{name}.mo"
        if not path.exists():
            continue
        with open(path, "rb") as handle:
            catalog = gettext.GNUTranslations(handle)._catalog   # type: ignore[attr-defined]
        for english, translated in sorted((k, v) for k, v in catalog.items() if isinstance(k, str) and k):
            if (isinstance(translated, str) and not _MARKUP.search(english + translated) and english.isascii()
                    and 12 <= len(english) <= 70 and 12 <= len(translated) <= 60):
                pairs.append((english.strip(), translated.strip()))
    return pairs


def _english_lines(pool: list[str], rng: random.Random, count: int) -> list[str]:
    """`count` lines of about 60-75 characters made of whole English strings."""
    lines, line = [], ""
    while len(lines) < count:
        piece = rng.choice(pool).rstrip(".:") + "."
        line = f"{line} {piece}".strip()
        if len(line) >= 60:
            lines.append(line[:78].rsplit(" ", 1)[0] if len(line) > 78 else line)
            line = ""
    return lines


def make_pages(count: int, seed: int) -> list[dict]:
    pages = []
    for language, (code, script, pack, font) in LANGUAGES.items():
        pairs = _strings(code)
        if len(pairs) < 50:
            sys.exit(f"too few message strings under {LOCALE / code}: {len(pairs)}")
        english_pool = [english for english, _ in pairs]
        own = [translated for _, translated in pairs
               if sum(1 for char in translated if char.isalpha() and not char.isascii())
               >= 0.6 * sum(1 for char in translated if char.isalpha())
               and (language not in UNSPACED or len(translated) <= 36)]   # a line's width of CJK
        for k in range(count):
            rng = random.Random(f"{seed}/{language}/{k}")
            english = _english_lines(english_pool, rng, ENGLISH_LINES)
            foreign = rng.sample(own, FOREIGN_LINES)
            places = sorted(rng.sample(range(1, ENGLISH_LINES), FOREIGN_LINES))
            lines = [(text, False) for text in english]
            for offset, (place, text) in enumerate(zip(places, foreign)):
                lines.insert(place + offset, (text, True))
            pages.append({"name": f"{language}_{k + 1}", "language": language, "script": script, "pack": pack,
                          "font": font, "lines": lines})
    return pages


def build(pages: list[dict], work: Path, seed: int) -> None:
    for folder in ("pdf", "png300", "scan", "scan_up"):
        (work / folder).mkdir(parents=True, exist_ok=True)
    for page in pages:
        doc = pymupdf.open()
        pdf_page = doc.new_page(width=595, height=842)
        pdf_page.insert_font(fontname="serif", fontfile=SERIF)
        for i, (text, foreign) in enumerate(page["lines"]):
            pdf_page.insert_text((72, 90 + 20 * i), text, fontsize=11,
                                 fontname=page["font"] if foreign and page["font"] else "serif")
        doc.save(work / "pdf" / f"{page['name']}.pdf")
        Image.fromarray(_render(pdf_page, BEST_DPI)).save(work / "png300" / f"{page['name']}.png",
                                                         dpi=(BEST_DPI, BEST_DPI))
        damaged = scan_like(_render(pdf_page, DPI).copy(), random.Random(f"{seed}/{page['name']}"))
        Image.fromarray(damaged).save(work / "scan" / f"{page['name']}.jpg", quality=95, dpi=(DPI, DPI))
        upscale(work / "scan" / f"{page['name']}.jpg", work / "scan_up" / f"{page['name']}.png", 1.5)
        doc.close()


def run_tesseract(jobs: list[tuple[Path, Path, str]]) -> dict:
    """`tesseract IMAGE OUT --psm 3 -l LANG` for each (image, out stem, lang), two at once."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}

    def one(job: tuple[Path, Path, str]) -> int:
        image, stem, lang = job
        stem.parent.mkdir(parents=True, exist_ok=True)
        return subprocess.run(["tesseract", str(image), str(stem), "--psm", "3", "-l", lang],
                              capture_output=True, env=env).returncode

    started, cpu = time.perf_counter(), _cpu_children()
    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(one, jobs))
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu_children() - cpu, "returncode": max(codes, default=0)}


def _units(text: str, unspaced: bool) -> Counter[str]:
    normalised = normalise(text)
    if unspaced:
        return Counter(char for char in normalised if not char.isspace() and not char.isascii())
    return Counter(words(normalised))


def score(output: str, page: dict) -> dict:
    unspaced = page["language"] in UNSPACED
    found_foreign, found_english = _units(output, unspaced), _units(output, False)
    truth_foreign = _units("\n".join(text for text, foreign in page["lines"] if foreign), unspaced)
    truth_english = _units("\n".join(text for text, foreign in page["lines"] if not foreign), False)
    return {"foreign_truth": sum(truth_foreign.values()), "foreign_found": sum((truth_foreign & found_foreign).values()),
            "english_truth": sum(truth_english.values()), "english_found": sum((truth_english & found_english).values())}


def line_scripts(result: Path) -> dict[str, int]:
    if not result.exists():
        return {}
    found: Counter[str] = Counter()
    for region in json.loads(result.read_text())["documents"][0]["pages"][0]["regions"]:
        for line in region.get("lines", ()):
            found[str(line.get("script"))] += 1
    return dict(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "minority_scripts")
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "minority_scripts.json")
    parser.add_argument("--pages", type=int, default=2, help="pages per language")
    parser.add_argument("--variants", default="clean,scan")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    pages = make_pages(args.pages, args.seed)
    build(pages, args.work, args.seed)
    variants, systems = args.variants.split(","), args.systems.split(",")
    runs: dict[str, dict] = {}
    rows = []
    for variant in variants:
        for system in systems:
            out = args.work / "out" / variant / system
            out.mkdir(parents=True, exist_ok=True)
            if system == "ocrserve":
                folder, suffix = ("pdf", ".pdf") if variant == "clean" else ("scan", ".jpg")
                runs[f"{variant}/{system}"] = run_ocrserve([args.work / folder / f"{p['name']}{suffix}" for p in pages], out)
            else:
                folder = "png300" if variant == "clean" else "scan_up"
                runs[f"{variant}/{system}"] = run_tesseract(
                    [(args.work / folder / f"{p['name']}.png", out / p["name"],
                      "eng" if system == "tesseract" else f"eng+{p['pack']}") for p in pages])
            run = runs[f"{variant}/{system}"]
            print(f"{variant}/{system}: {run['wall_s']:.0f} s wall, {run['cpu_s']:.0f} s CPU", flush=True)
        for page in pages:
            row = {"name": page["name"], "variant": variant, "language": page["language"]}
            for system in systems:
                text = args.work / "out" / variant / system / f"{page['name']}.txt"
                row[system] = score(text.read_text() if text.exists() else "", page)
            if "ocrserve" in systems:
                row["ocrserve_scripts"] = line_scripts(args.work / "out" / variant / "ocrserve" / f"{page['name']}.json")
            rows.append(row)
    summary = {}
    print(f"\n{'variant':8} {'lang':5} " + " ".join(f"{s + ' foreign/eng':>28}" for s in systems))
    for variant in variants:
        for language in LANGUAGES:
            mine = [row for row in rows if row["variant"] == variant and row["language"] == language]
            entry = {}
            for system in systems:
                total = {key: sum(row[system][key] for row in mine) for key in mine[0][system]}
                entry[system] = {"foreign_recall": total["foreign_found"] / max(1, total["foreign_truth"]),
                                 "english_recall": total["english_found"] / max(1, total["english_truth"])}
            summary[f"{variant}/{language}"] = entry
            print(f"{variant:8} {language:5} " + " ".join(
                f"{entry[s]['foreign_recall']:>19.3f} / {entry[s]['english_recall']:.3f}" for s in systems))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs, "summary": summary, "pages": rows}, indent=1, ensure_ascii=False))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
