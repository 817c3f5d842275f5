"""Recognition with the Tesseract OCR program (Debian `tesseract-ocr`).

Tesseract reads a list file of images in one run and separates their texts
with a form feed, so a page's crops cost one process start per batch instead
of one per line; a page's crops are split into at least as many batches as
there are processes, of about equal pixel counts, so all of them work. Line
crops run in single-line mode (`--psm 7`), whole regions
(tables, formulas, regions without detected lines) as a block of text
(`--psm 6`); `recognize_in_blocks` reads line crops that say their block as that block (`--psm 6`,
words with their boxes) and gives each line the words inside it. Small crops are scaled up first: Tesseract reads glyphs best
around 30-40 pixels tall, and a 10 pt line rendered at 100-150 DPI is half that.
A crop's `draft` (`text_layer="verify"`) is ignored: Tesseract just reads.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from workers.recognizers.base import RecognitionItem, RecognitionOutcome, RecognizerConfigError

MIN_LINE_HEIGHT_PX = 40
# a block read whole (`recognize_in_blocks`) is scaled so its median line is this tall: Tesseract read
# the multilingual set's 200-DPI blocks (lines ~30 px) better as they are than at 300 DPI
BLOCK_LINE_HEIGHT_PX = 30
BLOCK_ITEMS = 20           # a block's time budget, in lines' (`timeout_s_per_item`)
# packs whose lines are read one by one even in `recognize_in_blocks`: Tesseract's words there are not
# the line's words (Korean and Chinese come one syllable or character a word, so joining them with
# spaces broke the Korean pages' words: CER 0.09 -> 0.31), and right-to-left lines (the Arabic
# pages lost 4% of their words read in blocks); measured on Korean and Arabic, assumed for the rest
LINE_BY_LINE_PACKS = frozenset({"kor", "kor_vert", "jpn", "jpn_vert", "chi_sim", "chi_tra", "chi_sim_vert",
                                "chi_tra_vert", "tha", "lao", "khm", "mya", "bod", "ara", "fas", "urd", "pus",
                                "heb", "yid", "syr", "div"})
WORD_REACH_PX = 4          # how far outside a line's box a word's centre may lie and still be its
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

    def recognize_in_blocks(self, items: list[RecognitionItem]) -> list[RecognitionOutcome]:
        """Line crops that say their block (`RecognitionItem.block`) read the way Tesseract reads best:
        each block whole (`--psm 6`), its words given to the line whose box holds their centre. On the
        multilingual set's Vietnamese and Russian pages Tesseract finds 1-3% more words that way than
        in the same lines cut out one by one (docs/BENCHMARKS.md). A line that gets no word, and every
        other item, is read as `recognize` reads it, and so are lines in the scripts of
        `LINE_BY_LINE_PACKS`."""
        outcomes: list[RecognitionOutcome | None] = [None] * len(items)
        groups: dict[tuple[int, str], list[int]] = {}
        for i, item in enumerate(items):
            lang = self._lang_of(item)
            if (item.is_single_line and item.block is not None and item.box_in_block is not None
                    and not LINE_BY_LINE_PACKS & set(lang.split("+"))):
                groups.setdefault((id(item.block), lang), []).append(i)
        for lang in dict.fromkeys(lang for _, lang in groups):
            keys = [key for key in groups if key[1] == lang]
            blocks = [items[groups[key][0]].block for key in keys]
            scales = [_block_scale([items[i].box_in_block for i in groups[key]]) for key in keys]  # type: ignore[misc]
            images = [_scaled(block.image, scale) for block, scale in zip(blocks, scales)]  # type: ignore[union-attr]
            batches = _balanced_batches(list(range(len(keys))), images, self.num_processes)
            with ThreadPoolExecutor(max_workers=self.num_processes) as pool:
                for batch, read in zip(batches, pool.map(lambda b: self._words(b, images, lang), batches)):
                    for k, words in zip(batch, read):
                        if words is None:
                            continue   # the block's run failed: its lines are read one by one below
                        ids = groups[keys[k]]
                        boxes = [tuple(v * scales[k] for v in items[i].box_in_block) for i in ids]  # type: ignore[union-attr]
                        for i, text in zip(ids, _words_to_lines(words, boxes)):
                            if text:
                                outcomes[i] = RecognitionOutcome(text)
        rest = [i for i, outcome in enumerate(outcomes) if outcome is None]
        for i, outcome in zip(rest, self.recognize([items[i] for i in rest])):
            outcomes[i] = outcome
        return outcomes  # type: ignore[return-value]

    def _words(self, batch: list[int], images: list[Image.Image], lang: str) -> list[list[_Word] | None]:
        """Each image of `batch` read as a block of text: its words, or None where Tesseract failed."""
        done = self._program([images[k] for k in batch], ["--psm", _BLOCK_MODE, "-l", lang, "tsv"],
                             timeout=30 + self.timeout_s_per_item * len(batch) * BLOCK_ITEMS)
        if done is None or done.returncode != 0:
            return [None] * len(batch)
        words: list[list[_Word]] = [[] for _ in batch]
        for row in done.stdout.splitlines():
            fields = row.split("\t")
            if len(fields) != 12 or fields[0] != "5" or not fields[11].strip():
                continue
            page = int(fields[1]) - 1
            left, top, width, height = (int(v) for v in fields[6:10])
            if 0 <= page < len(batch):
                words[page].append(_Word(left + width / 2, top + height / 2, fields[11].strip()))
        return words  # type: ignore[return-value]

    def _lang_of(self, item: RecognitionItem) -> str:
        return item.languages if item.languages and item.languages != "detect" else self.lang

    def _run(self, mode: str, items: list[RecognitionItem], lang: str) -> list[RecognitionOutcome]:
        done = self._program([_scaled_for_tesseract(item.image) for item in items],
                             ["--psm", mode, "-l", lang, "-c", f"page_separator={PAGE_SEPARATOR}"],
                             timeout=30 + self.timeout_s_per_item * len(items))
        if done is None:
            return [RecognitionOutcome(None, "tesseract took too long on this batch")] * len(items)
        if done.returncode != 0:
            detail = done.stderr.strip().splitlines()[-1:] or ["no message"]
            return [RecognitionOutcome(None, f"tesseract failed (exit {done.returncode}): {detail[0][:200]}")] * len(items)
        texts = done.stdout.split(PAGE_SEPARATOR)
        if len(texts) != len(items):
            return [RecognitionOutcome(None, f"tesseract returned {len(texts)} texts for {len(items)} images")] * len(items)
        return [RecognitionOutcome(_clean(text, single_line=mode == _LINE_MODE)) for text in texts]

    def _program(self, images: list[Image.Image], options: list[str],
                 timeout: float) -> subprocess.CompletedProcess[str] | None:
        """One run of the program over `images` (a list file: one process, each image a page of its
        output), one thread (the runs themselves go in parallel); None when it took too long."""
        with tempfile.TemporaryDirectory(prefix="ocrserve-tess-") as tmp:
            paths = []
            for k, image in enumerate(images):
                path = Path(tmp) / f"{k}.png"
                image.save(path)
                paths.append(str(path))
            list_file = Path(tmp) / "images.txt"
            list_file.write_text("\n".join(paths) + "\n")
            try:
                return subprocess.run([self.command, str(list_file), "stdout", *options], capture_output=True,
                                      text=True, env={**os.environ, "OMP_THREAD_LIMIT": "1"}, timeout=timeout)
            except FileNotFoundError:
                raise RecognizerConfigError(
                    f"the tesseract program ({self.command!r}) is not installed; install the Debian package "
                    f"tesseract-ocr") from None
            except subprocess.TimeoutExpired:
                return None


@dataclass(frozen=True)
class _Word:
    x: float          # its box's centre, in the block image's pixels
    y: float
    text: str         # (words come in Tesseract's reading order: right to left in Arabic and Hebrew)


def _block_scale(line_boxes: list[tuple[float, float, float, float]]) -> float:
    """How much a block is scaled up for Tesseract: its median line to `BLOCK_LINE_HEIGHT_PX`, no less."""
    median = statistics.median(box[3] - box[1] for box in line_boxes)
    return 1.0 if median >= BLOCK_LINE_HEIGHT_PX else min(MAX_UPSCALE, BLOCK_LINE_HEIGHT_PX / max(1.0, median))


def _scaled(image: Image.Image, scale: float) -> Image.Image:
    if scale == 1.0:
        return image
    return image.resize((max(1, round(image.width * scale)), max(1, round(image.height * scale))),
                        Image.Resampling.LANCZOS)


def _words_to_lines(words: list[_Word], boxes: list[tuple[float, ...]]) -> list[str]:
    """Each line's words, in the order Tesseract read them: a word goes to the line whose columns
    hold its centre and whose middle is nearest it, within half the line's height (and
    `WORD_REACH_PX`); a word no line holds is dropped (Tesseract read something the line detector did
    not find: no line is made for it)."""
    placed: list[list[_Word]] = [[] for _ in boxes]
    for word in words:
        def distance(k: int) -> float:
            return abs((boxes[k][1] + boxes[k][3]) / 2 - word.y)
        near = [k for k, box in enumerate(boxes) if box[0] - WORD_REACH_PX <= word.x <= box[2] + WORD_REACH_PX
                and distance(k) <= (box[3] - box[1]) / 2 + WORD_REACH_PX]
        if near:
            placed[min(near, key=distance)].append(word)
    return [" ".join(word.text for word in line) for line in placed]


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
