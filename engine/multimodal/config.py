"""What the operator chooses about images (one frozen dataclass, DESIGN's config rule)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MultimodalConfig:
    max_image_bytes: int = 20 * 1024 * 1024    # encoded size of one image
    max_image_pixels: int = 40_000_000         # width * height, read from the header before decoding
    max_images_per_request: int = 8
    min_image_side: int = 4                    # pixels; thinner images carry nothing a model can read
    max_aspect_ratio: float = 200.0            # the Qwen2-VL / GLM-V processors refuse longer strips
    encoder_cache_bytes: int = 256 * 1024 * 1024  # vision-encoder outputs kept for repeated images
    preprocess_cache_bytes: int = 64 * 1024 * 1024  # preprocessed pixels (house-ocr: encoder features), likewise

    def __post_init__(self) -> None:
        for name in ("max_image_bytes", "max_image_pixels", "max_images_per_request", "min_image_side"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.max_aspect_ratio < 1:
            raise ValueError(f"max_aspect_ratio must be at least 1, got {self.max_aspect_ratio}")
        for name in ("encoder_cache_bytes", "preprocess_cache_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
