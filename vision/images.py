"""Raster uploads (PNG, JPEG, TIFF with any number of frames) read under caps.

`inspect_image` reads headers only: Pillow's `Image.open` parses the header and
defers decoding, and seeking a TIFF to its next frame reads that frame's
directory, not its pixels. So a small file that declares a 20000x20000 image
(a decompression bomb) is refused before a single pixel is decoded. Pillow's
own global bomb limit is left alone; ours is lower and fires first, and when
Pillow's fires anyway (headers far past both) it is reported the same way.
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from vision.formats import DocumentKind
from vision.limits import CorruptDocumentError, DocumentTooLargeError, ImageTooLargeError, VisionLimits

# Errors Pillow raises on malformed or truncated input.
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, TypeError, EOFError, struct.error, IndexError, KeyError)
_PLAUSIBLE_DPI = (30.0, 2400.0)
ASSUMED_IMAGE_DPI = 150.0  # when a file states no (or an absurd) resolution
WIDE_GREY_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
# A wide frame is scaled a strip of rows at a time, so its float64 working copy is
# at most this many pixels (2 MB), never the whole frame (80 MP would need 640 MB
# per copy, ~2 GB with the temporaries of a whole-array expression).
STRIP_PIXELS = 1 << 18


@dataclass(frozen=True)
class ImageInfo:
    kind: DocumentKind
    frame_sizes: tuple[tuple[int, int], ...]  # (width, height) per frame after EXIF rotation, from headers
    frame_dpis: tuple[float, ...]             # stated (or assumed) resolution per frame

    @property
    def num_frames(self) -> int:
        return len(self.frame_sizes)


def inspect_image(data: bytes | Path, kind: DocumentKind, limits: VisionLimits) -> ImageInfo:
    """Frame sizes from the headers, each checked against the pixel cap; no pixel is decoded."""
    frame_sizes: list[tuple[int, int]] = []
    frame_dpis: list[float] = []
    with _open(data, kind) as image:
        while True:
            _check_size(image.size, len(frame_sizes), limits)
            frame_sizes.append(_upright_size(image))
            frame_dpis.append(_stated_dpi(image))
            if kind is not DocumentKind.TIFF or not _has_next_frame(image, len(frame_sizes)):
                break
            if len(frame_sizes) >= limits.max_pages:
                raise DocumentTooLargeError(f"the TIFF has more than {limits.max_pages} pages, the limit")
        if kind is DocumentKind.PNG:
            _verify_png(image)
    return ImageInfo(kind=kind, frame_sizes=tuple(frame_sizes), frame_dpis=tuple(frame_dpis))


def decode_frame(data: bytes | Path, kind: DocumentKind, frame_index: int,
                 limits: VisionLimits) -> tuple[Image.Image, float]:
    """Frame `frame_index` as an RGB image (transparency flattened onto white,
    EXIF orientation applied) and the resolution the file states for it."""
    with _open(data, kind) as image:
        if frame_index:
            image.seek(frame_index)
        _check_size(image.size, frame_index, limits)
        dpi = _stated_dpi(image)
        try:
            image.load()
            upright = ImageOps.exif_transpose(image) if _honours_exif_orientation(image) else image
            return _to_rgb(upright), dpi
        except _DECODE_ERRORS as exc:
            raise CorruptDocumentError(
                f"the image data of page {frame_index + 1} is damaged or truncated ({exc})") from exc


def _open(data: bytes | Path, kind: DocumentKind) -> Image.Image:
    """`data`: the file's bytes, or the file (Pillow then reads only what it decodes)."""
    try:
        return Image.open(data if isinstance(data, Path) else io.BytesIO(data), formats=[kind.pillow_format])
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"the image declares too many pixels to decode ({exc})") from exc
    except UnidentifiedImageError as exc:
        raise CorruptDocumentError(f"the file starts like a {kind.value.upper()} image but cannot be read") from exc
    except _DECODE_ERRORS as exc:
        raise CorruptDocumentError(f"the {kind.value.upper()} header is damaged ({exc})") from exc


def _check_size(size: tuple[int, int], frame_index: int, limits: VisionLimits) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise CorruptDocumentError(f"page {frame_index + 1} of the image has no pixels ({width}x{height})")
    if width * height > limits.max_image_pixels:
        raise ImageTooLargeError(
            f"page {frame_index + 1} of the image is {width}x{height} = {width * height:,} pixels; "
            f"the limit is {limits.max_image_pixels:,}")


def _has_next_frame(image: Image.Image, num_seen: int) -> bool:
    try:
        image.seek(num_seen)
    except EOFError:
        return False
    except _DECODE_ERRORS as exc:
        raise CorruptDocumentError(f"the TIFF directory of page {num_seen + 1} is damaged ({exc})") from exc
    return True


def _upright_size(image: Image.Image) -> tuple[int, int]:
    """Size once EXIF orientation is applied: orientations 5-8 swap the sides."""
    width, height = image.size
    if not _honours_exif_orientation(image):
        return width, height
    try:
        orientation = image.getexif().get(0x0112, 1)
    except _DECODE_ERRORS:
        orientation = 1  # unreadable EXIF: taken as upright; decoding reports real damage
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def _honours_exif_orientation(image: Image.Image) -> bool:
    """JPEG and TIFF carry EXIF in their headers; a PNG's eXIf chunk may follow
    the pixel data, so reading it would decode the image: PNGs are taken as shot."""
    return image.format in ("JPEG", "TIFF")


def _verify_png(image: Image.Image) -> None:
    """Walk the PNG chunks and their checksums (without inflating pixel data),
    so a truncated or damaged PNG is refused at upload rather than mid-job."""
    try:
        image.verify()
    except _DECODE_ERRORS as exc:
        raise CorruptDocumentError(f"the PNG is damaged or truncated ({exc})") from exc


def _stated_dpi(image: Image.Image) -> float:
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    low, high = _PLAUSIBLE_DPI
    return value if low <= value <= high else ASSUMED_IMAGE_DPI


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode in WIDE_GREY_MODES:
        # 16/32-bit greyscale: Pillow's own conversion clips at 255 and turns most pages white.
        image = wide_grey_to_l(image)
    has_alpha = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info)
    if has_alpha:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image if image.mode == "RGB" else image.convert("RGB")


def wide_grey_to_l(image: Image.Image) -> Image.Image:
    """A 16/32-bit or float greyscale image as 8-bit "L", scaled so its brightest pixel is 255
    (values already within 0..255 are kept). Works in row strips: besides the output (one byte
    a pixel) only `STRIP_PIXELS` pixels are ever copied, however large the frame. The result is
    pixel-identical to scaling the whole frame at once in float64."""
    width, height = image.size
    rows = max(1, STRIP_PIXELS // max(1, width))
    strips = [(0, top, width, min(height, top + rows)) for top in range(0, height, rows)]
    # The peak is taken per strip in the frame's own dtype (no float copy); NaN propagates as in numpy.
    peaks = [np.asarray(image.crop(box)).max() for box in strips]
    peak = float(np.max(np.array(peaks, dtype=np.float64))) if peaks else 0.0
    scale = 255.0 / peak if peak > 255.0 else 1.0
    out = np.empty((height, width), dtype=np.uint8)   # [height, width]
    for box in strips:
        values = np.asarray(image.crop(box), dtype=np.float64)   # [rows, width], one strip
        values *= scale
        np.clip(values, 0, 255, out=values)
        out[box[1]:box[3]] = values.astype(np.uint8)
    return Image.fromarray(out, mode="L")
