"""Which script a page's hard lines are in, from their images, with Tesseract.

Used when the house model reads a page badly (`workers.recognizers.routing`): a sample of the
page's line crops, stacked into one image, is read once with the first installed pack of every
script (Tesseract's `tsv` output, word confidences 0-100); the pack that reads it with the highest
confidence, weighted by word length, names the script, counting only readings mostly written in
the pack's own script (`MIN_OWN_SHARE` of their letters and digits). Han and Japanese share their kanji, so a
Han win is Japanese when the Japanese pack's reading holds kana. A sample no pack reads with
`MIN_CONFIDENCE` is named by Tesseract's orientation and script detection (`--psm 0`, the `osd`
data every Tesseract install has), which knows scripts no pack here reads, where it is sure enough
(`OSD_MIN_CONFIDENCE`) and names no script whose pack has just failed on the sample; else the
script is not named (a Latin verdict stands: the house model still reads such a page).

Tesseract OSD alone names whole pages badly (on the multilingual set a Greek page came out Latin
and a Chinese page with commands in it Latin) and takes ~4 s a page; this sample takes ~0.5 s a
pack.

`identify_lines` does the same per line (scores in `_row_scores`), for the few lines of a Latin page the house model read
unsurely (a Russian title in an English bibliography, a Greek motto): the lines are stacked into
one sheet and every word Tesseract reads is put back on its line by where it lies. The page's
Latin pack reads first, and a line it reads surely (`LINE_SURE_LATIN`) is Latin and costs no other
pack; the rest go to each other script's pack at once. A pack names a line when it reads it
surely (`LINE_MIN_CONFIDENCE`) and `MIN_LEAD` more surely than the Latin pack, mostly in its own
letters and with some letters no Latin one looks like (`MIN_OWN_LETTERS`); a pack that leads every
other script's packs by `MIN_LEAD` as well needs only `LINE_LOW_CONFIDENCE`, in a reading of
`LOW_MIN_OWN_LETTERS` such letters or more (the Greek pack is unsure of right readings). (Scoring by the
median word instead of the mean, and asking every line for a lead over the other scripts' packs
too, were tried on the bench's pages, bench/minority_scripts.py, and named fewer lines rightly.)

A script with several packs installed (Cyrillic: Russian, Ukrainian, Bulgarian) names its language
by reading the same sheet with each (`_language_pack`): the Russian pack reads Ukrainian 'і' as '1'
and 'ї' as '!', and the pack of the text's own language reads it most surely.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from vision.scripts import script_counts, script_of_text
from workers.recognizers.languages import SCRIPT_LANGUAGES

SAMPLE_LINES = 4          # the widest lines of the page's hard ones
SAMPLE_LINE_HEIGHT = 40   # px: Tesseract's best glyph size
MIN_CONFIDENCE = 35.0     # a mean word confidence under this: no installed pack reads the sample
LATIN_PACK = "eng"
# Tesseract's OSD names a script no pack here read only this surely (its "Script confidence"): on
# three lines set in FreeSerif it named Thai 110, Hebrew 8.9 and Tamil 2.2 rightly, and Georgian
# "Arabic" at 0.3 (then read with the Arabic pack, as Arabic nonsense) and Armenian "Latin" at 0.3
OSD_MIN_CONFIDENCE = 1.0
KANA_SHARE = 0.2
MIN_OWN_SHARE = 0.6       # a pack whose reading is less than this much in its own script did not read the sample
LINE_SURE_LATIN = 80.0    # English reads a line this surely (mean word confidence, 0-100) or more: the line is Latin
MIN_LEAD = 15.0           # another script's pack names a line only reading it this much more surely than English,
LINE_MIN_CONFIDENCE = 60.0   # and this surely at least: the Arabic pack reads a blurred URL's x's at 30-40
# or, leading every other script's packs by MIN_LEAD too, this surely: the Greek pack reads a right
# line of Greek at 50-57 where English reads it at 34-36 and the next script's pack at 25-33
LINE_LOW_CONFIDENCE = 45.0
# and in that many letters unlike Latin ones (`_unlike_latin`), not MIN_OWN_LETTERS: a damaged word
# of an English contents line was read '„Цвдепи' by the Cyrillic packs at 45-60 (augraphy, asymptote p3)
LOW_MIN_OWN_LETTERS = 10
MAX_ROW_WIDTH = 3000      # px: a longer line is scaled down whole to fit its row of the sheet
# a pack names a line only where its reading holds this many of its script's letters that no Latin
# letter looks like: the Russian pack reads a reference card's "M-E" as Cyrillic "М-Е", surely
MIN_OWN_LETTERS = 3
# another pack of the page's script names its language only reading the lines this much more surely
# (pooled mean word confidence) than the script's first pack: on English pages' lines of Ukrainian,
# Bulgarian and Russian (bench/minority_scripts.py) the right pack led by 5.8, 3.2 and 2.7
LANGUAGE_MIN_LEAD = 2.0
# Cyrillic and Greek letters drawn like Latin ones
LATIN_LOOKALIKES = frozenset("АВЕЅІЈКМНОРСТУХаеіјорсуххѕԁԛԝ" "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοικνυρ")


@dataclass(frozen=True)
class ScriptGuess:
    script: str | None          # vision.scripts name; None: nothing could name it
    pack: str | None            # the pack that read the sample best; None: no installed pack reads it
    confidence: float           # that reading's mean word confidence, 0-100


def identify_script(images: list[Image.Image], installed: frozenset[str], command: str = "tesseract",
                    num_processes: int = 2) -> ScriptGuess:
    """The script of the lines in `images` (line crops, any sizes)."""
    candidates = [packs[0] for packs in
                  ([code for code in codes if code in installed] for codes in SCRIPT_LANGUAGES.values()) if packs]
    candidates = list(dict.fromkeys(([LATIN_PACK] if LATIN_PACK in installed else []) + candidates))
    if "jpn" in installed and "chi_sim" in candidates and "jpn" not in candidates:
        candidates.append("jpn")
    with tempfile.TemporaryDirectory(prefix="ocrserve-script-") as tmp:
        sample = Path(tmp) / "sample.png"
        widest = sorted(images, key=lambda image: -image.width / max(1, image.height))[:SAMPLE_LINES]
        sheet = _Sheet.save(widest, sample)
        rows_of = dict(zip(candidates, sheet.read(command, candidates, num_processes)))
        readings = {pack: [word for row in rows for word in row] for pack, rows in rows_of.items()}
        scores = {pack: _mean_confidence(words) if _own_share(pack, words) >= MIN_OWN_SHARE else 0.0
                  for pack, words in readings.items()}
        best = max(scores, key=lambda pack: scores[pack], default=None)
        if best is None or scores[best] < MIN_CONFIDENCE:
            script, osd_confidence = _osd_script(command, sample)
            if script != "Latin" and (osd_confidence < OSD_MIN_CONFIDENCE or script in _read_by(candidates)):
                script = None   # OSD unsure, or naming a script whose pack just failed to read the sample
            return ScriptGuess(script, None, scores.get(best, 0.0) if best else 0.0)
        language = _language_pack(sheet, best, rows_of[best], installed, command, num_processes)
        if language != best:
            return ScriptGuess(_pack_script(language), language, scores[best])
    text = " ".join(word for word, _ in readings[best])
    script = script_of_text(text)
    if best in ("chi_sim", "chi_tra", "jpn") and "jpn" in readings:
        counts = script_counts(" ".join(word for word, _ in readings["jpn"]))
        kana, han = counts.get("Japanese", 0), counts.get("Han", 0)
        # Japanese prose is a third or more kana; the Japanese pack reads a few kana into Chinese
        script = "Japanese" if kana >= max(3, KANA_SHARE * (kana + han)) else "Han"
        best = "jpn" if script == "Japanese" else best if best != "jpn" else next(
            (pack for pack in ("chi_sim", "chi_tra") if pack in readings), best)
    return ScriptGuess(script, best, scores[best])


@dataclass(frozen=True)
class LineScript:
    script: str | None      # vision.scripts name; None: not named
    reading: str | None     # the naming pack's reading of the line, where another script's pack named it
    pack: str | None = None   # that pack: the script's first installed, or the one of its language (`_language_pack`)


def identify_lines(images: list[Image.Image], installed: frozenset[str], packs: list[str],
                   command: str = "tesseract", num_processes: int = 2,
                   latin_pack: str = LATIN_PACK) -> list[LineScript]:
    """Each line crop's script: "Latin" where `latin_pack` (the page's language, else English)
    reads it surely, the script of the pack in `packs` (every installed pack of the scripts asked
    about) that reads it best by the rule in the module docstring, with the reading of the pack of
    its language (`_language_of`), or None where neither holds (a damaged Latin line, or a script
    none of `packs` reads). Every pack of a script reads, not only its first: the Russian pack
    reads a line of Ukrainian too unsurely to name it."""
    latin_pack = latin_pack if latin_pack in installed else LATIN_PACK
    if not images or latin_pack not in installed:
        return [LineScript(None, None)] * len(images)
    with tempfile.TemporaryDirectory(prefix="ocrserve-script-") as tmp:
        english = _row_scores(_read_rows(command, Path(tmp) / "lines.png", images, [latin_pack])[0], latin_pack,
                              own_only=False)
        found = [LineScript("Latin" if score >= LINE_SURE_LATIN else None, None) for score in english]
        unsure = [k for k, named in enumerate(found) if named.script is None]
        packs = [pack for pack in dict.fromkeys(packs) if pack in installed and pack not in (latin_pack, LATIN_PACK)]
        if not unsure or not packs:
            return found
        rows_of = dict(zip(packs, _read_rows(command, Path(tmp) / "unsure.png", [images[k] for k in unsure], packs,
                                             num_processes)))
    scores = {pack: _row_scores(rows, pack) for pack, rows in rows_of.items()}
    best = {row: max(packs, key=lambda pack: scores[pack][row]) for row in range(len(unsure))}
    named: dict[str | None, list[int]] = {}   # script -> the sheet's rows named in it
    for row, k in enumerate(unsure):
        score, script = scores[best[row]][row], _pack_script(best[row])
        others = max((scores[pack][row] for pack in packs if _pack_script(pack) != script), default=0.0)
        if score >= english[k] + MIN_LEAD and (score >= LINE_MIN_CONFIDENCE or (
                score >= max(LINE_LOW_CONFIDENCE, others + MIN_LEAD)
                and _unlike_latin(rows_of[best[row]][row]) >= LOW_MIN_OWN_LETTERS)):
            named.setdefault(script, []).append(row)
    for script, rows in named.items():
        languages = _languages(script, rows_of)
        language = _language_of(languages, rows_of, rows) if languages else None   # else the row's best pack
        for row in rows:
            pack = language or best[row]
            found[unsure[row]] = LineScript(script, " ".join(word for word, _ in rows_of[pack][row]), pack)
    return found


@dataclass(frozen=True)
class _Sheet:
    """Line crops stacked one per row on a sheet saved once (`_rows_sheet`), which packs read."""
    path: Path
    count: int
    pitch: int
    gap: int

    @classmethod
    def save(cls, images: list[Image.Image], path: Path) -> _Sheet:
        image, pitch, gap = _rows_sheet(images)
        image.save(path)
        return cls(path, len(images), pitch, gap)

    def read(self, command: str, packs: list[str], num_processes: int = 1) -> list[list[list[tuple[str, float]]]]:
        """For each of `packs`, the words it reads on each row, put back on their rows by where they lie."""
        def read(pack: str) -> list[list[tuple[str, float]]]:
            rows: list[list[tuple[str, float]]] = [[] for _ in range(self.count)]
            for word, conf, centre in _read_tsv(command, self.path, pack):
                row = int((centre - self.gap / 2) // self.pitch)
                if 0 <= row < len(rows):
                    rows[row].append((word, conf))
            return rows

        with ThreadPoolExecutor(max_workers=max(1, num_processes)) as pool:
            return list(pool.map(read, packs))


def _read_rows(command: str, sheet: Path, images: list[Image.Image], packs: list[str],
               num_processes: int = 1) -> list[list[list[tuple[str, float]]]]:
    """For each of `packs`, the words it reads on each of `images` (a `_Sheet` saved at `sheet`)."""
    return _Sheet.save(images, sheet).read(command, packs, num_processes)


def _language_pack(sheet: _Sheet, pack: str, rows: list[list[tuple[str, float]]],
                   installed: frozenset[str], command: str, num_processes: int) -> str:
    """The language of a page in a script with several packs installed (Russian, Ukrainian,
    Bulgarian): `pack`, the script's first, read the sample `sheet` as `rows`; each other installed
    pack of the script reads it too, and `_language_of` picks."""
    others = [code for code in _languages(_pack_script(pack), installed) if code != pack]
    if not others:
        return pack
    rows_of = {pack: rows, **dict(zip(others, sheet.read(command, others, num_processes)))}
    return _language_of([pack, *others], rows_of, list(range(sheet.count)))


def _languages(script: str | None, available) -> list[str]:
    """The packs of `script` among `available`, its most read language first, that compete to name
    its language; none for Chinese and Japanese, which share their kanji (each line or page keeps
    the pack that read it best, as `identify_script` decides between them)."""
    if script in (None, "Han", "Japanese"):
        return []
    return [code for code in SCRIPT_LANGUAGES.get(script, ()) if code in available]


def _language_of(packs: list[str], rows_of: dict[str, list[list[tuple[str, float]]]], rows: list[int]) -> str:
    """Of one script's `packs` (its most read language first), the one whose reading of `rows` is
    surest (pooled mean word confidence), where it leads the first by `LANGUAGE_MIN_LEAD`; else the
    first."""
    def pooled(pack: str) -> float:
        return _mean_confidence([word for row in rows for word in rows_of[pack][row]])

    best = max(packs[1:], key=pooled, default=packs[0])
    return best if pooled(best) >= pooled(packs[0]) + LANGUAGE_MIN_LEAD else packs[0]


def _row_scores(rows: list[list[tuple[str, float]]], pack: str, own_only: bool = True) -> list[float]:
    """Each row's mean word confidence, weighted by length; with `own_only` (another script's pack),
    0 where the reading is not mostly in the pack's script or holds fewer than `MIN_OWN_LETTERS` of
    its letters unlike Latin ones."""
    return [_mean_confidence(words) if not own_only or (_own_share(pack, words) >= MIN_OWN_SHARE
                                                        and _unlike_latin(words) >= MIN_OWN_LETTERS) else 0.0
            for words in rows]


def _unlike_latin(words: list[tuple[str, float]]) -> int:
    """How many letters of the reading are neither Latin nor drawn like a Latin letter."""
    return sum(1 for word, _ in words for char in word
               if char.isalpha() and char not in LATIN_LOOKALIKES and script_of_text(char) not in (None, "Latin"))


def _pack_script(pack: str) -> str | None:
    """The script a pack is made for: the one whose first pack it is ("jpn" is Japanese), else any."""
    return next((script for script, codes in SCRIPT_LANGUAGES.items() if codes[0] == pack),
                next((script for script, codes in SCRIPT_LANGUAGES.items() if pack in codes), None))


def _rows_sheet(images: list[Image.Image]) -> tuple[Image.Image, int, int]:
    """Every line, in order, scaled to `SAMPLE_LINE_HEIGHT` (a very long one scaled down whole to
    `MAX_ROW_WIDTH`), one per row on white; with the row pitch and the gap above each row."""
    height, gap = SAMPLE_LINE_HEIGHT, SAMPLE_LINE_HEIGHT // 2
    scaled = []
    for image in images:
        width = max(1, round(image.width * height / max(1, image.height)))
        size = (width, height) if width <= MAX_ROW_WIDTH else (
            MAX_ROW_WIDTH, max(1, round(height * MAX_ROW_WIDTH / width)))
        scaled.append(image.convert("L").resize(size))
    pitch = height + gap
    sheet = Image.new("L", (max(image.width for image in scaled) + 2 * gap, gap + len(scaled) * pitch), 255)
    for k, image in enumerate(scaled):
        sheet.paste(image, (gap, gap + k * pitch + (height - image.height) // 2))
    return sheet, pitch, gap


def _read_tsv(command: str, image: Path, pack: str) -> list[tuple[str, float, float]]:
    """(word, confidence, vertical centre in px) of every word Tesseract reads in `image` with `pack`."""
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run([command, str(image), "stdout", "--psm", "6", "-l", pack, "tsv"],
                              capture_output=True, text=True, env=env, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return []
    words = []
    for row in done.stdout.splitlines()[1:]:
        fields = row.split("\t")
        if len(fields) == 12 and fields[11].strip():
            try:
                words.append((fields[11].strip(), float(fields[10]), int(fields[7]) + int(fields[9]) / 2))
            except ValueError:
                continue
    return words


def _own_share(pack: str, words: list[tuple[str, float]]) -> float:
    """The share of the reading's letters and digits that are letters of the pack's own script: a
    pack made to read another script writes its own letters where it can and Latin letters or
    digits where it cannot (the Korean pack reads a line of Hebrew as '11 그 비 ! 721 ㅁ '714 ㅁ
    1717' at a mean confidence of 53, the Russian pack one of Georgian as 'додобзсобо 96903000')."""
    own = {script for script, packs in SCRIPT_LANGUAGES.items() if pack in packs} or {"Latin"}
    if own & {"Han", "Japanese"}:
        own |= {"Han", "Japanese"}
    text = " ".join(word for word, _ in words)
    counts = script_counts(text)
    return sum(counts[script] for script in own) / max(1, sum(counts.values()) + sum(char.isdigit() for char in text))


def _mean_confidence(words: list[tuple[str, float]]) -> float:
    weights = [len(word) for word, _ in words]
    return sum(conf * weight for (_, conf), weight in zip(words, weights)) / sum(weights) if words else 0.0


def _osd_script(command: str, image: Path) -> tuple[str | None, float]:
    """Tesseract's own script detection: the name it prints and its script confidence, or None and
    0 when it cannot tell."""
    try:
        done = subprocess.run([command, str(image), "stdout", "--psm", "0"], capture_output=True, text=True,
                              env={**os.environ, "OMP_THREAD_LIMIT": "1"}, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None, 0.0
    fields = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    try:
        confidence = float(fields.get("Script confidence", "0"))
    except ValueError:
        confidence = 0.0
    return fields.get("Script") or None, confidence


def _read_by(packs: list[str]) -> set[str]:
    """The scripts these packs are made for."""
    return {script for pack in packs if (script := _pack_script(pack)) is not None}
