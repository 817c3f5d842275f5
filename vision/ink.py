"""Whether a line crop holds anything a recogniser could read.

The line detector fires now and then on things that are not text: a table rule,
a row of dot leaders between a title and its page number, a speck of scan
noise, a blank strip at a crop's edge. A recogniser handed such a crop still
writes something (the house model reads a rule as "ptaGætæÖ"), so those crops
are answered with no text instead of being sent.

Ink is what is darker than the crop's paper by `MIN_CONTRAST` grey levels
(Otsu's threshold between the two, so a grey scan and a white page are judged
alike). The crop holds text when its ink makes at least `MIN_GLYPHS` blobs
that are glyph-sized: at least `MIN_GLYPH_HEIGHT` of the crop's height tall
(dots, specks and the thin stroke of a rule are not), and not a rule (a blob
far wider than tall and thin).
"""
from __future__ import annotations

import cv2
import numpy as np
from PIL import Image

MIN_CONTRAST = 40         # grey levels between paper and ink
MIN_GLYPH_HEIGHT = 0.25   # of the crop's height
MIN_GLYPH_PIXELS = 3      # a glyph blob is at least this tall in pixels, whatever the crop
MIN_GLYPHS = 1
RULE_ASPECT = 8.0         # a blob this many times wider than tall ...
RULE_MAX_HEIGHT = 0.2     # ... and at most this share of the crop's height is a rule


def has_text_ink(image: Image.Image) -> bool:
    """True when the crop holds glyph-sized ink; False for blank, rule, dot and speck crops."""
    grey = np.asarray(image.convert("L"))
    if grey.size == 0:
        return False
    low, high = np.percentile(grey, (2, 98))
    if high - low < MIN_CONTRAST:
        return False
    _, ink = cv2.threshold(grey, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
    num_blobs, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    height = grey.shape[0]
    min_height = max(MIN_GLYPH_PIXELS, MIN_GLYPH_HEIGHT * height)
    glyphs = 0
    for blob in range(1, num_blobs):
        blob_w, blob_h = stats[blob, cv2.CC_STAT_WIDTH], stats[blob, cv2.CC_STAT_HEIGHT]
        is_rule = blob_w >= RULE_ASPECT * blob_h and blob_h <= RULE_MAX_HEIGHT * height
        if blob_h >= min_height and not is_rule:
            glyphs += 1
            if glyphs >= MIN_GLYPHS:
                return True
    return False
