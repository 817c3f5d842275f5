"""Vision-encoder outputs kept by image content hash, so an image sent again
(or needed again by the next prefill chunk, or after a retraction) is not
re-encoded. Bounded by bytes; least recently used entries go first. Used only
on the engine thread."""
from __future__ import annotations

from collections import OrderedDict

import torch


class EncoderCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.num_bytes = 0
        self.num_hits = 0
        self.num_misses = 0
        self._entries: OrderedDict[bytes, torch.Tensor] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> torch.Tensor | None:
        embeds = self._entries.get(key)
        if embeds is None:
            self.num_misses += 1
            return None
        self._entries.move_to_end(key)
        self.num_hits += 1
        return embeds

    def put(self, key: bytes, embeds: torch.Tensor) -> None:
        size = embeds.numel() * embeds.element_size()
        if size > self.max_bytes or key in self._entries:
            return  # larger than the whole budget: the caller keeps its own reference for this step
        while self.num_bytes + size > self.max_bytes:
            _, old = self._entries.popitem(last=False)
            self.num_bytes -= old.numel() * old.element_size()
        self._entries[key] = embeds
        self.num_bytes += size

    def clear(self) -> None:
        self._entries.clear()
        self.num_bytes = 0
