"""Multimodal rotary positions (M-RoPE) of a prompt, as transformers' Qwen2-VL,
Qwen2.5-VL and GLM-V `get_rope_index` compute them for still images.

Text tokens advance one position each, with all three components equal. An
image whose merged grid is t x h x w starts at the current position p: its
token (i, j, k) sits at (p + i, p + j, p + k), and the text after it resumes
at p + max(h, w). Generated tokens continue the last text rule: token index
n (counting the whole sequence) sits at n + delta, delta = max position + 1 -
prompt length (delta <= 0: an image takes fewer positions than tokens).
"""
from __future__ import annotations

import torch


def mrope_positions(prompt_len: int, image_grids: list[tuple[int, tuple[int, int, int]]],
                    merge_size: int) -> tuple[torch.Tensor, int]:
    """image_grids: (offset of the image's first token, (t, h, w) in patches), in prompt order.
    Returns positions [3, prompt_len] int64 and the delta for generated tokens."""
    pieces: list[torch.Tensor] = []
    position = cursor = 0
    for offset, (t, h, w) in image_grids:
        assert offset >= cursor, "images must be in prompt order and not overlap"
        pieces.append(torch.arange(offset - cursor).expand(3, -1) + position)
        position += offset - cursor
        gh, gw = h // merge_size, w // merge_size
        grid = torch.meshgrid(torch.arange(t), torch.arange(gh), torch.arange(gw), indexing="ij")
        pieces.append(torch.stack(grid).reshape(3, -1) + position)   # [3, t * gh * gw]
        position += max(h, w) // merge_size
        cursor = offset + t * gh * gw
    assert cursor <= prompt_len
    pieces.append(torch.arange(prompt_len - cursor).expand(3, -1) + position)
    positions = torch.cat(pieces, dim=1)
    delta = int(positions.max()) + 1 - prompt_len
    return positions, delta
