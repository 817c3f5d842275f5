"""The middle of a curved text line (`vision.lines`): kept on the detected line, on the result's
line (`workers.page_result.LineResult`) and in the JSON, and used to cut the line out along it
(`vision.crops`) and to stand its words on it (`workers.line_words`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Curve:
    """The middle of a curved line, in page pixels: y at each x (increasing, the box's width
    covered), and the thickness of its band about that middle (grown as a box is)."""
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    thickness: float

    def middle_at(self, x):
        """y of the line's middle at page x (an array or a number); level beyond its ends."""
        return np.interp(x, self.xs, self.ys)

    def to_dict(self) -> dict:
        return {"xs": [round(v, 1) for v in self.xs], "ys": [round(v, 1) for v in self.ys],
                "thickness": round(self.thickness, 1)}

    @classmethod
    def from_dict(cls, data: dict | None) -> Curve | None:
        if not data:
            return None
        return cls(tuple(float(v) for v in data["xs"]), tuple(float(v) for v in data["ys"]), float(data["thickness"]))


def band_rows(curve: Curve, x0: int, x1: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """(xs, tops): the page columns x0..x1-1 and, for each, the page row where a band `height`
    rows tall centred on the curve starts (floats, for `cv2.remap`)."""
    xs = np.arange(x0, x1, dtype=np.float32)
    return xs, (curve.middle_at(xs) - height / 2).astype(np.float32)
