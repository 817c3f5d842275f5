"""Vision-encoder outputs kept by image content hash, so an image sent again
(or needed again by the next prefill chunk, or after a retraction) is not
re-encoded. Bounded by bytes; least recently used entries go first. Not
thread-safe: the engine thread keeps one (projected image embeddings), the
prompt builder another under its own lock (preprocessed pixels or, for
house-ocr, its line encoder's features)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

import torch


class EncoderCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.num_bytes = 0
        self.num_hits = 0
        self.num_misses = 0
        self._entries: OrderedDict[bytes, tuple[Any, int]] = OrderedDict()   # key -> (value, its bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: bytes) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            self.num_misses += 1
            return None
        self._entries.move_to_end(key)
        self.num_hits += 1
        return entry[0]

    def put(self, key: bytes, value: Any, num_bytes: int | None = None) -> None:
        """`value`: a tensor (its bytes counted), or anything with `num_bytes` given."""
        size = num_bytes if num_bytes is not None else _tensor_bytes(value)
        if size > self.max_bytes or key in self._entries:
            return  # larger than the whole budget: the caller keeps its own reference for this step
        while self.num_bytes + size > self.max_bytes:
            _, (_, old_size) = self._entries.popitem(last=False)
            self.num_bytes -= old_size
        self._entries[key] = (value, size)
        self.num_bytes += size

    def clear(self) -> None:
        self._entries.clear()
        self.num_bytes = 0


def _tensor_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()
