"""Line crops for the handwriting classifier: text typeset in Debian's handwriting fonts
(label 1) and in its print fonts (label 0), aged like scans.

Fonts are split by family: the classifier trains on `TRAIN_HANDS` and the house model's
training print fonts, and is evaluated on `HELD_OUT_HANDS` and the house model's held-out
print fonts (`training.house_ocr.fonts`), so its figures are for typefaces it never saw. The
text is Faker's (sentences, names, addresses, dates, amounts): what people write on forms and
in notes, from no evaluation page.
"""
from __future__ import annotations

import functools
import random
import string
from pathlib import Path

import numpy as np
from faker import Faker
from fontTools.ttLib import TTFont
from PIL import Image, ImageDraw, ImageFont

from training.house_ocr.fonts import Font, held_out_fonts, load_font, training_fonts
from training.house_ocr.render import age, render_line, tint

# Debian packages (scripts/setup.sh installs them), by the folder their fonts land in.
TRAIN_HANDS = ("fifthhorseman", "dancingscript", "kristi", "kaushanscript", "femkeklaver")
HELD_OUT_HANDS = ("breip", "humor-sans", "ecolier-court", "joscelyn", "bwht")
HAND_ROOTS = (Path("/usr/share/fonts/truetype"), Path("/usr/share/fonts/opentype"))


@functools.lru_cache(maxsize=None)
def hand_fonts(families: tuple[str, ...]) -> tuple[Font, ...]:
    fonts = []
    for root in HAND_ROOTS:
        for family in families:
            for path in sorted((root / family).glob("*")) if (root / family).is_dir() else ():
                if path.suffix.lower() in (".ttf", ".otf") and (font := _hand_font(path)) is not None:
                    fonts.append(font)
    return tuple(fonts)


def _hand_font(path: Path) -> Font | None:
    """A handwriting font that has letters and digits (many lack some punctuation: text is
    trimmed to what a font covers)."""
    font = load_font(path)
    if font is not None:
        return font
    try:
        cmap = TTFont(str(path), fontNumber=0, lazy=True).getBestCmap() or {}
    except Exception:   # a font fontTools cannot parse is not used
        return None
    covered = frozenset(chr(code) for code in cmap if chr(code).isprintable())
    if not all(ch in covered for ch in string.ascii_letters + string.digits):
        return None
    return Font(str(path), path.stem, False, covered)


def _text(fake: Faker, rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        text = fake.sentence(nb_words=rng.randint(2, 10)).rstrip(".") if rng.random() < 0.5 else fake.sentence()
    elif kind < 0.6:
        text = fake.name()
    elif kind < 0.72:
        text = fake.street_address()
    elif kind < 0.82:
        text = fake.date(pattern=rng.choice(["%d/%m/%Y", "%B %d, %Y", "%Y-%m-%d"]))
    elif kind < 0.9:
        text = f"{rng.choice(['Total', 'Paid', 'Due', ''])} {rng.uniform(1, 9999):,.2f}".strip()
    else:
        text = " ".join(fake.words(nb=rng.randint(1, 4)))
    return text[:rng.randint(6, 90)].strip() or "note"


def hand_line(text: str, font: Font, size: int, rng: random.Random) -> np.ndarray:
    """`text` written glyph by glyph as a hand does: each letter a little off the baseline,
    turned, sized and spaced its own way, the whole line drifting and warped smoothly. A font
    alone repeats each letter exactly; handwriting never does, and that is what the classifier
    should learn, not the look of a few families."""
    pil = ImageFont.truetype(font.path, size)
    drift, slope = 0.0, rng.uniform(-0.03, 0.03)
    width = int(pil.getlength(text) * 1.3) + 2 * size
    canvas = Image.new("L", (width, size * 3), 0)
    x = size * 0.5
    for ch in text:
        advance = pil.getlength(ch) * rng.uniform(0.9, 1.15)
        if ch.strip():
            glyph_size = max(6, int(size * rng.uniform(0.88, 1.12)))
            glyph = Image.new("L", (glyph_size * 2, glyph_size * 2), 0)
            ImageDraw.Draw(glyph).text((glyph_size // 2, glyph_size // 3), ch,
                                       font=ImageFont.truetype(font.path, glyph_size), fill=255)
            glyph = glyph.rotate(rng.uniform(-7, 7), resample=Image.BILINEAR)
            drift += rng.uniform(-0.04, 0.04) * size
            drift = max(-0.15 * size, min(0.15 * size, drift))
            y = int(size * 0.6 + drift + slope * x)
            canvas.paste(255, (int(x - glyph_size // 2), y), glyph)
        x += advance
    ink = np.asarray(canvas)
    rows, cols = np.nonzero(ink > 40)
    if rows.size == 0:
        return np.full((size, size, 3), 255, np.uint8)
    pad = int(0.3 * size) + 3
    ink = ink[max(0, rows.min() - pad):rows.max() + pad, max(0, cols.min() - pad):cols.max() + pad]
    return np.repeat((255 - ink)[:, :, None], 3, axis=2).astype(np.uint8)


def sample(fonts: tuple[Font, ...], rng: random.Random, fake: Faker, hand: bool = False) -> np.ndarray:
    """A gray [h, w] uint8 crop of generated text in one of `fonts`, sometimes aged; handwriting
    is written glyph by glyph (`hand_line`) most of the time."""
    text = _text(fake, rng)
    font = rng.choice(fonts)
    text = "".join(ch for ch in text if ch in font.covered or ch == " ").strip() or "note"
    size = rng.randint(16, 56)
    if hand and rng.random() < 0.8:
        crop = hand_line(text, font, size, rng)
    else:
        crop = render_line(text, font, size, rng, word_gap=rng.uniform(1.0, 1.6))
    if rng.random() < 0.7:
        crop = tint(crop, rng)
    if rng.random() < 0.6:
        crop = age(crop, rng)
    return crop.mean(axis=2).astype(np.uint8)


def dataset(count: int, held_out: bool, seed: int, jitter: bool = True) -> tuple[list[np.ndarray], np.ndarray]:
    """`count` crops, half handwriting, half print, shuffled; labels 1 for handwriting. Without
    `jitter` handwriting is the fonts' own glyphs, set like print (the strict check)."""
    rng = random.Random(seed)
    fake = Faker(["en_US", "en_GB", "de_DE", "fr_FR"])
    fake.seed_instance(seed)
    hands = hand_fonts(HELD_OUT_HANDS if held_out else TRAIN_HANDS)
    prints = held_out_fonts() if held_out else training_fonts()
    images, labels = [], []
    for i in range(count):
        label = i % 2
        images.append(sample(hands if label else prints, rng, fake, hand=bool(label) and jitter))
        labels.append(label)
    order = list(range(count))
    rng.shuffle(order)
    return [images[i] for i in order], np.array([labels[i] for i in order], dtype=np.float32)
