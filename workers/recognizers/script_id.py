"""Which script a page's hard lines are in, from their images, with Tesseract.

Used when the house model reads a page badly (`workers.recognizers.routing`): a sample of the
page's line crops, stacked into one image, is read once with the first installed pack of every
script (Tesseract's `tsv` output, word confidences 0-100); the pack that reads it with the highest
confidence, weighted by word length, names the script, counting only readings mostly written in
the pack's own script (`MIN_OWN_SHARE`). Han and Japanese share their kanji, so a
Han win is Japanese when the Japanese pack's reading holds kana. A sample no pack reads with
`MIN_CONFIDENCE` is named by Tesseract's orientation and script detection (`--psm 0`, the `osd`
data every Tesseract install has), which knows scripts no pack here reads.

Tesseract OSD alone names whole pages badly (on the multilingual set a Greek page came out Latin
and a Chinese page with commands in it Latin) and takes ~4 s a page; this sample takes ~0.5 s a
pack.
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
KANA_SHARE = 0.2
MIN_OWN_SHARE = 0.6       # a pack whose reading is less than this much in its own script did not read the sample


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
        _stacked(images).save(sample)
        with ThreadPoolExecutor(max_workers=num_processes) as pool:
            readings = dict(zip(candidates, pool.map(lambda pack: _read_tsv(command, sample, pack), candidates)))
        scores = {pack: _mean_confidence(words) if _own_share(pack, words) >= MIN_OWN_SHARE else 0.0
                  for pack, words in readings.items()}
        best = max(scores, key=lambda pack: scores[pack], default=None)
        if best is None or scores[best] < MIN_CONFIDENCE:
            return ScriptGuess(_osd_script(command, sample), None, scores.get(best, 0.0) if best else 0.0)
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


def _stacked(images: list[Image.Image]) -> Image.Image:
    """The widest lines, each scaled to one height, one under another on white."""
    chosen = sorted(images, key=lambda image: -image.width / max(1, image.height))[:SAMPLE_LINES]
    scaled = [image.convert("L").resize((max(1, round(image.width * SAMPLE_LINE_HEIGHT / max(1, image.height))),
                                         SAMPLE_LINE_HEIGHT)) for image in chosen]
    gap = SAMPLE_LINE_HEIGHT // 2
    width = min(4000, max(image.width for image in scaled) + 2 * gap)
    sheet = Image.new("L", (width, gap + len(scaled) * (SAMPLE_LINE_HEIGHT + gap)), 255)
    for k, image in enumerate(scaled):
        sheet.paste(image, (gap, gap + k * (SAMPLE_LINE_HEIGHT + gap)))
    return sheet


def _read_tsv(command: str, image: Path, pack: str) -> list[tuple[str, float]]:
    """(word, confidence) of every word Tesseract reads in `image` with `pack`."""
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
                words.append((fields[11].strip(), float(fields[10])))
            except ValueError:
                continue
    return words


def _own_share(pack: str, words: list[tuple[str, float]]) -> float:
    """The share of the reading's letters that are in the pack's own script: a pack made to read
    another script writes its own letters where it can and Latin ones where it cannot."""
    own = {script for script, packs in SCRIPT_LANGUAGES.items() if pack in packs} or {"Latin"}
    if own & {"Han", "Japanese"}:
        own |= {"Han", "Japanese"}
    counts = script_counts(" ".join(word for word, _ in words))
    return sum(counts[script] for script in own) / max(1, sum(counts.values()))


def _mean_confidence(words: list[tuple[str, float]]) -> float:
    weights = [len(word) for word, _ in words]
    return sum(conf * weight for (_, conf), weight in zip(words, weights)) / sum(weights) if words else 0.0


def _osd_script(command: str, image: Path) -> str | None:
    """Tesseract's own script detection: the name it prints, or None when it cannot tell."""
    try:
        done = subprocess.run([command, str(image), "stdout", "--psm", "0"], capture_output=True, text=True,
                              env={**os.environ, "OMP_THREAD_LIMIT": "1"}, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None
    fields = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    return fields.get("Script") or None
