"""Recognition with the Tesseract OCR program (Debian `tesseract-ocr`).

Tesseract reads a list file of images in one run and separates their texts
with a form feed, so a page's crops cost one process start per batch instead
of one per line; a page's crops are split into at least as many batches as
there are processes, of about equal pixel counts, so all of them work. Line
crops run in single-line mode (`--psm 7`), whole regions
(tables, formulas, regions without detected lines) as a block of text
(`--psm 6`). Small crops are scaled up first: Tesseract reads glyphs best
around 30-40 pixels tall, and a 10 pt line rendered at 100-150 DPI is half that.
A crop's `draft` (`text_layer="verify"`) is ignored: Tesseract just reads.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from workers.recognizers.base import RecognitionItem, RecognitionOutcome, RecognizerConfigError

MIN_LINE_HEIGHT_PX = 40
MAX_UPSCALE = 4.0
PAGE_SEPARATOR = "\f"
BATCH_SIZE = 64
_LINE_MODE, _BLOCK_MODE = "7", "6"


class TesseractRecognizer:
    name = "tesseract"
    reads_single_lines = False
    softens_noisy_lines = False

    def __init__(self, command: str = "tesseract", lang: str = "eng", num_processes: int = 2,
                 timeout_s_per_item: float = 5.0):
        self.command = command
        self.lang = lang
        self.num_processes = num_processes
        self.timeout_s_per_item = timeout_s_per_item

    def check(self) -> None:
        try:
            listed = subprocess.run([self.command, "--list-langs"], capture_output=True, text=True, timeout=30)
        except FileNotFoundError:
            raise RecognizerConfigError(
                f"the tesseract program ({self.command!r}) is not installed; install the Debian package "
                f"tesseract-ocr or set OCRSERVE_TESSERACT_CMD") from None
        languages = set(listed.stdout.split())
        missing = [lang for lang in self.lang.split("+") if lang not in languages]
        if missing:
            raise RecognizerConfigError(
                f"tesseract has no language data for {', '.join(missing)}; install tesseract-ocr-{missing[0]} "
                f"or set OCRSERVE_TESSERACT_LANG")

    def recognize(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        """Items whose job names its `languages` are read with those packs (checked at submit),
        the others with this recogniser's own."""
        outcomes: list[RecognitionOutcome | None] = [None] * len(items)
        batches: list[tuple[str, str, list[int]]] = []
        for mode in (_LINE_MODE, _BLOCK_MODE):
            for lang in dict.fromkeys(self._lang_of(item) for item in items):
                ids = [i for i, item in enumerate(items)
                       if (mode == _LINE_MODE) == item.is_single_line and self._lang_of(item) == lang]
                batches += [(mode, lang, batch) for batch in _balanced_batches(ids, [items[i].image for i in ids],
                                                                                self.num_processes)]
        with ThreadPoolExecutor(max_workers=self.num_processes) as pool:
            for (mode, lang, ids), texts in zip(batches, pool.map(
                    lambda b: self._run(b[0], [items[i] for i in b[2]], b[1]), batches)):
                for i, outcome in zip(ids, texts):
                    outcomes[i] = outcome
        assert all(outcome is not None for outcome in outcomes)
        return outcomes  # type: ignore[return-value]

    def _lang_of(self, item: RecognitionItem) -> str:
        return item.languages if item.languages and item.languages != "detect" else self.lang

    def _run(self, mode: str, items: list[RecognitionItem], lang: str) -> list[RecognitionOutcome]:
        with tempfile.TemporaryDirectory(prefix="ocrserve-tess-") as tmp:
            paths = []
            for i, item in enumerate(items):
                path = Path(tmp) / f"{i}.png"
                _scaled_for_tesseract(item.image).save(path)
                paths.append(str(path))
            list_file = Path(tmp) / "images.txt"
            list_file.write_text("\n".join(paths) + "\n")
            command = [self.command, str(list_file), "stdout", "--psm", mode, "-l", lang,
                       "-c", f"page_separator={PAGE_SEPARATOR}"]
            # One thread per run: the runs themselves go in parallel.
            env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
            try:
                done = subprocess.run(command, capture_output=True, text=True, env=env,
                                      timeout=30 + self.timeout_s_per_item * len(items))
            except FileNotFoundError:
                raise RecognizerConfigError(
                    f"the tesseract program ({self.command!r}) is not installed; install the Debian package "
                    f"tesseract-ocr") from None
            except subprocess.TimeoutExpired:
                return [RecognitionOutcome(None, "tesseract took too long on this batch")] * len(items)
        if done.returncode != 0:
            detail = done.stderr.strip().splitlines()[-1:] or ["no message"]
            return [RecognitionOutcome(None, f"tesseract failed (exit {done.returncode}): {detail[0][:200]}")] * len(items)
        texts = done.stdout.split(PAGE_SEPARATOR)
        if len(texts) != len(items):
            return [RecognitionOutcome(None, f"tesseract returned {len(texts)} texts for {len(items)} images")] * len(items)
        return [RecognitionOutcome(_clean(text, single_line=mode == _LINE_MODE)) for text in texts]


def _balanced_batches(ids: list[int], images: list[Image.Image], num_processes: int) -> list[list[int]]:
    """Split ids into batches of at most BATCH_SIZE, at least one per process when there are
    enough items (a page's 60 lines in one batch would leave the other processes idle), with
    about equal pixel counts (Tesseract's time follows the pixels): largest first, each to the
    batch with the fewest pixels so far. Each batch keeps its ids in page order."""
    if not ids:
        return []
    count = max(-(-len(ids) // BATCH_SIZE), min(num_processes, len(ids)))
    loads = [0] * count
    batches: list[list[int]] = [[] for _ in range(count)]
    for k in sorted(range(len(ids)), key=lambda k: -images[k].width * images[k].height):
        open_batches = [b for b in range(count) if len(batches[b]) < BATCH_SIZE]
        b = min(open_batches, key=lambda b: loads[b])
        batches[b].append(k)
        loads[b] += images[k].width * images[k].height
    return [[ids[k] for k in sorted(batch)] for batch in batches if batch]


def _scaled_for_tesseract(image: Image.Image) -> Image.Image:
    if image.height >= MIN_LINE_HEIGHT_PX:
        return image
    scale = min(MAX_UPSCALE, MIN_LINE_HEIGHT_PX / image.height)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.Resampling.LANCZOS)


def _clean(text: str, single_line: bool) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines()]
    if single_line:
        return " ".join(line.strip() for line in lines if line.strip())
    return "\n".join(line for line in lines if line.strip())
