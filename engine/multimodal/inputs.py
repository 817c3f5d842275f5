"""What a vision-language request carries: its images' spans in the expanded prompt, their
pixels and M-RoPE positions (built by prompt_builder.py; read by the request, the model
runner's batch inputs and the models' hooks). A leaf: it imports no engine module."""
from __future__ import annotations

from dataclasses import dataclass

import torch

_KEY_BASE = 1 << 62  # image key ids live in [2^62, 2^63): beyond any vocabulary, still int64


@dataclass(frozen=True, eq=False)
class ImageSpan:
    offset: int                     # index of the image's first token in the prompt
    num_tokens: int
    grid_thw: tuple[int, int, int]  # in patches, before merging
    pixel_values: torch.Tensor      # [num_patches, patch_dim]: kept so a retracted request can re-encode
    content_hash: bytes

    @property
    def end(self) -> int:
        return self.offset + self.num_tokens

    @property
    def key_id(self) -> int:
        return _KEY_BASE + int.from_bytes(self.content_hash[:8], "big") % _KEY_BASE


@dataclass(frozen=True, eq=False)
class MultimodalInputs:
    prompt_ids: list[int]           # with every image's tokens expanded
    cache_key_ids: list[int]        # prompt_ids with image tokens replaced by their image's key id
    images: tuple[ImageSpan, ...]   # in prompt order
    positions: torch.Tensor         # [3, len(prompt_ids)] int64 M-RoPE positions
    position_delta: int             # generated token n (whole-sequence index) sits at n + delta
