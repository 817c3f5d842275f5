"""The model's own image rules: resize to its pixel budget on its patch grid,
normalise, patchify. This is transformers' PIL image processor named in the
checkpoint's preprocessor_config.json (AutoProcessor cannot be used here: it
builds a video processor that needs torchvision; the PIL path is also the one
the reference uses, so resizing is identical)."""
from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from PIL import Image

from engine.errors import InvalidRequestError
from engine.models.registry import architecture as architecture_row


def image_processor_class(type_name: str):
    """The PIL-backend class for a processor type name such as 'Qwen2VLImageProcessorFast'."""
    base = type_name.removesuffix("Fast").removesuffix("Pil")
    cls = getattr(transformers, base + "Pil", None)
    if cls is None:
        raise ValueError(f"image processor {type_name!r} has no PIL implementation in transformers "
                         f"{transformers.__version__}")
    return cls


class ImagePreprocessor:
    def __init__(self, path: Path, architecture: str):
        config_path = path / "preprocessor_config.json"
        if not config_path.exists():
            raise FileNotFoundError(f"{path} has no preprocessor_config.json; a vision-language checkpoint needs "
                                    "its image processor settings")
        raw = json.loads(config_path.read_text())
        # the architecture's own where the file names none (engine/models/registry.py)
        type_name = raw.get("image_processor_type") or architecture_row(architecture).image_processor
        self.processor = image_processor_class(type_name).from_pretrained(str(path))
        self.merge_size = int(self.processor.merge_size)

    def preprocess(self, image: Image.Image, label: str) -> tuple[torch.Tensor, tuple[int, int, int]]:
        """-> pixel_values [num_patches, channels * temporal_patch * patch^2], grid (t, h, w) in patches."""
        try:
            out = self.processor(images=[image], return_tensors="pt")
        except ValueError as exc:  # e.g. an aspect ratio the model's resize rule refuses
            raise InvalidRequestError(f"{label} cannot be prepared for this model: {exc}", "images") from None
        t, h, w = (int(x) for x in out["image_grid_thw"][0])
        return out["pixel_values"], (t, h, w)
