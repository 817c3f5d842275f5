"""Prompt ids + images -> what a vision-language request carries.

The chat template leaves one image token per image (between the image's start
and end tokens). Each becomes t*h*w / merge^2 image tokens, one per merged
patch, as the model's own processor expands it; a prompt that already holds
the expanded run is accepted as is.

Prefix-cache keys: an image's tokens are all the same id in the prompt, so
keyed by token ids alone two different images would share cache entries.
`cache_key_ids` replaces them by an id derived from the image's content hash,
above any vocabulary: the same picture sent again matches, a different one
(of the same size) stops matching where its tokens start. Everything else that
shapes an image's K/V (its grid, hence the M-RoPE positions of what follows)
is a function of its pixels, so the key covers it.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import torch
from PIL import Image

from engine.errors import InvalidRequestError
from engine.model_config import ModelConfig
from engine.models.registry import architecture, resolve
from engine.multimodal.config import MultimodalConfig
from engine.multimodal.encoder_cache import EncoderCache
from engine.multimodal.image_decode import ImageData, decode_image
from engine.multimodal.image_processor import ImagePreprocessor
from engine.multimodal.inputs import ImageSpan, MultimodalInputs
from engine.multimodal.mrope import mrope_positions

__all__ = ["ImageSpan", "MultimodalInputs", "MultimodalPromptBuilder"]   # the first two live in inputs.py


class MultimodalPromptBuilder:
    def __init__(self, path: Path, model_config: ModelConfig, config: MultimodalConfig):
        assert model_config.is_multimodal
        self.config = config
        self.image_token_id = model_config.image_token_id
        own = architecture(model_config.architecture).preprocessor   # house-ocr: line crops -> its encoder
        self.preprocessor = resolve(own)() if own else ImagePreprocessor(path, model_config.architecture)
        self.merge_size = self.preprocessor.merge_size
        # Preprocessed pixels by image hash: an image sent again (a retried line, a retried page,
        # the same crop twice) skips the model's preprocessing -- for house-ocr, its line encoder.
        # `build` runs on the engine's request-building threads, hence the lock.
        self._preprocessed = EncoderCache(config.preprocess_cache_bytes)   # hash -> (pixel values, grid)
        self._lock = threading.Lock()

    def image_runs(self, prompt_ids: Sequence[int]) -> list[tuple[int, int]]:
        """(start, length) of each run of image tokens: one run per image."""
        runs: list[tuple[int, int]] = []
        for i, t in enumerate(prompt_ids):
            if t != self.image_token_id:
                continue
            if runs and runs[-1][0] + runs[-1][1] == i:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((i, 1))
        return runs

    def build(self, prompt_ids: Sequence[int], images: Sequence[ImageData]) -> MultimodalInputs:
        cfg = self.config
        prompt_ids = list(prompt_ids)
        if len(images) > cfg.max_images_per_request:
            raise InvalidRequestError(f"the request has {len(images)} images; the limit is "
                                      f"{cfg.max_images_per_request} per request", "images")
        runs = self.image_runs(prompt_ids)
        if len(runs) != len(images):
            raise InvalidRequestError(f"the prompt has {len(runs)} image placeholders but {len(images)} images were "
                                      "given; each image needs its own placeholder in the prompt", "images")
        ids: list[int] = []
        key_ids: list[int] = []
        spans: list[ImageSpan] = []
        cursor = 0
        for index, ((start, length), data) in enumerate(zip(runs, images)):
            label = f"image {index + 1}"
            decoded = decode_image(data, index, cfg)
            pixel_values, grid = self.preprocess(decoded.image, decoded.content_hash, label)
            num_tokens = grid[0] * grid[1] * grid[2] // self.merge_size ** 2
            if length not in (1, num_tokens):
                raise InvalidRequestError(f"{label} takes {num_tokens} tokens but its placeholder has {length}; "
                                          "give one image token per image", "images")
            ids += prompt_ids[cursor:start]
            key_ids += prompt_ids[cursor:start]
            span = ImageSpan(len(ids), num_tokens, grid, pixel_values, decoded.content_hash)
            ids += [self.image_token_id] * num_tokens
            key_ids += [span.key_id] * num_tokens
            spans.append(span)
            cursor = start + length
        ids += prompt_ids[cursor:]
        key_ids += prompt_ids[cursor:]
        positions, delta = mrope_positions(len(ids), [(s.offset, s.grid_thw) for s in spans], self.merge_size)
        return MultimodalInputs(ids, key_ids, tuple(spans), positions, delta)

    def clear_cache(self) -> None:
        with self._lock:
            self._preprocessed.clear()

    def preprocess(self, image: Image.Image, content_hash: bytes,
                   label: str) -> tuple[torch.Tensor, tuple[int, int, int]]:
        """The preprocessor's (pixel values, grid) of an image, from the cache when it is there (the
        tensors are shared between requests: nothing writes to them)."""
        with self._lock:
            cached = self._preprocessed.get(content_hash)
        if cached is not None:
            return cached
        pixel_values, grid = self.preprocessor.preprocess(image, label)
        with self._lock:
            self._preprocessed.put(content_hash, (pixel_values, grid),
                                   pixel_values.numel() * pixel_values.element_size())
        return pixel_values, grid
