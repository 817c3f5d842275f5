"""What a vision-language model needs per step beyond token ids: the M-RoPE
positions of each request's new tokens, and image embeddings in place of the
image tokens that fall in this step's chunk.

Chunked prefill may cut through an image: a chunk takes the rows of the
image's encoder output that match its own tokens. The encoder runs once per
image (its output then stays in the encoder cache), never per chunk.
"""
from __future__ import annotations

import torch

from engine.multimodal.encoder_cache import EncoderCache
from engine.multimodal.inputs import ImageSpan
from engine.request import Request


def chunk_positions(req: Request, start: int, num_tokens: int) -> torch.Tensor:
    """[3, num_tokens] positions of the request's tokens [start, start + num_tokens)."""
    end = start + num_tokens
    mm = req.multimodal
    if mm is None:  # text-only: all three components are the plain position
        return torch.arange(start, end).expand(3, -1)
    prompt_len = mm.positions.shape[1]
    parts = []
    if start < prompt_len:
        parts.append(mm.positions[:, start:min(end, prompt_len)])
    if end > prompt_len:
        parts.append((torch.arange(max(start, prompt_len), end) + mm.position_delta).expand(3, -1))
    return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]


def batch_positions(requests: list[Request], extend_lens: list[int]) -> torch.Tensor:
    """[3, num_tokens] for the flat batch (requests' new tokens back to back)."""
    return torch.cat([chunk_positions(r, r.num_computed, n) for r, n in zip(requests, extend_lens)], dim=1)


def batch_input_embeds(model, cache: EncoderCache, requests: list[Request], extend_lens: list[int],
                       input_ids: torch.Tensor) -> torch.Tensor | None:
    """[num_tokens, hidden] token embeddings with image rows spliced in, or None when no
    new token of this step is an image token (the model then embeds the ids itself)."""
    pieces: list[tuple[int, ImageSpan, int, int]] = []  # (batch row, image, first, end row of its output)
    row = 0
    for req, n in zip(requests, extend_lens):
        start = req.num_computed
        for image in req.multimodal.images if req.multimodal is not None else ():
            lo, hi = max(start, image.offset), min(start + n, image.end)
            if lo < hi:
                pieces.append((row + lo - start, image, lo - image.offset, hi - image.offset))
        row += n
    if not pieces:
        return None
    embeds = model.embed_tokens(input_ids)  # [num_tokens, hidden], a fresh tensor (gathered rows)
    for row, image, first, end in pieces:
        embeds[row : row + end - first] = image_embeds(model, cache, image)[first:end]
    return embeds


def image_embeds(model, cache: EncoderCache, image: ImageSpan) -> torch.Tensor:
    """[image.num_tokens, hidden] encoder output of one image, from the cache when it is there."""
    embeds = cache.get(image.content_hash)
    if embeds is None:
        embeds = model.encode_image(image.pixel_values, image.grid_thw)
        assert embeds.shape[0] == image.num_tokens, (embeds.shape, image.num_tokens)
        cache.put(image.content_hash, embeds)
    return embeds
