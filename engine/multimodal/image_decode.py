"""Decode one image from a request, refusing what must not be decoded.

Order matters (DESIGN, security stance): the encoded size is checked first,
then the header alone is parsed (PIL reads width and height without touching
pixel data) and the dimensions are checked; only then are the pixels decoded.
A 20000 x 20000 "decompression bomb" is refused from its header, a truncated
file when its pixels run out. Only still-image formats are opened.

The content hash (mode, size and pixels of the decoded image) names the image
in the prefix cache and the encoder cache: equal pixels give equal hashes
however the bytes were encoded.
"""
from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from engine.errors import InvalidRequestError
from engine.multimodal.config import MultimodalConfig

ALLOWED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")
PARAM = "images"

ImageData = bytes | Image.Image  # encoded bytes, or an image an in-process caller already has


@dataclass(frozen=True)
class DecodedImage:
    image: Image.Image
    content_hash: bytes  # sha256 over mode, size and pixels


def decode_image(data: ImageData, index: int, config: MultimodalConfig) -> DecodedImage:
    """Image `index` (0-based) of a request, decoded; InvalidRequestError says why not."""
    label = f"image {index + 1}"
    if isinstance(data, Image.Image):
        image = data
        check_dimensions(image.width, image.height, label, config)
    elif isinstance(data, (bytes, bytearray, memoryview)):
        image = _open_header(bytes(data), label, config)
        check_dimensions(image.width, image.height, label, config)
    else:
        raise InvalidRequestError(f"{label} must be encoded image bytes, got {type(data).__name__}", PARAM)
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InvalidRequestError(f"{label} could not be decoded: the file is truncated or corrupt ({exc})",
                                  PARAM) from None
    return DecodedImage(image, content_hash(image))


def _open_header(data: bytes, label: str, config: MultimodalConfig) -> Image.Image:
    if not data:
        raise InvalidRequestError(f"{label} is empty", PARAM)
    if len(data) > config.max_image_bytes:
        raise InvalidRequestError(f"{label} is {len(data)} bytes; the limit is {config.max_image_bytes} bytes", PARAM)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own pixel cap follows
            return Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
    except Image.DecompressionBombError:
        # PIL's own guard fires on headers far above any sane cap, before we can read the size.
        raise InvalidRequestError(f"{label} declares more pixels than the limit of {config.max_image_pixels} "
                                  "(a decompression bomb); it was not decoded", PARAM) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError):
        raise InvalidRequestError(f"{label} is not an image in a supported format "
                                  f"({', '.join(ALLOWED_FORMATS)})", PARAM) from None


def check_dimensions(width: int, height: int, label: str, config: MultimodalConfig) -> None:
    if width * height > config.max_image_pixels:
        raise InvalidRequestError(f"{label} is {width}x{height} = {width * height} pixels; the limit is "
                                  f"{config.max_image_pixels} pixels (checked before decoding)", PARAM)
    if min(width, height) < config.min_image_side:
        raise InvalidRequestError(f"{label} is {width}x{height} pixels; each side must be at least "
                                  f"{config.min_image_side} pixels", PARAM)
    ratio = max(width, height) / min(width, height)
    if ratio > config.max_aspect_ratio:
        raise InvalidRequestError(f"{label} is {width}x{height} pixels, an aspect ratio of {ratio:.0f}:1; "
                                  f"the limit is {config.max_aspect_ratio:.0f}:1", PARAM)


def content_hash(image: Image.Image) -> bytes:
    digest = hashlib.sha256(f"{image.mode}:{image.width}x{image.height}:".encode())
    digest.update(image.tobytes())
    return digest.digest()
