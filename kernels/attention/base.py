"""The attention backend contract: the model calls `forward` once per layer and
knows nothing of torch-vs-Triton.

| call                                        | when              | does                                        |
|---------------------------------------------|-------------------|---------------------------------------------|
| `prepare(batch) -> metadata`                | once per step     | turns the batch's per-request slot lists    |
|                                             |                   | into what the kernels read, on the device   |
| `forward(q, k, v, layer, pool, metadata)`   | once per layer    | stores the new K/V into their pool slots,   |
|                                             |                   | then attends; returns [tokens, heads, dim]  |

The batch (`engine.forward_batch.ForwardBatch`, read through the fields named in
`BatchLayout`, since kernels never import the engine) is a flat list of new
tokens: request i contributes `extend_lens[i]` of them, which attend causally
to its `kv_lens[i]` tokens, whose slots are `kv_slots[i]` (prefix first, new
ones last; `out_slots` are the new ones, in batch order). The pool is
`engine.kv_pool.KVPool`: `k_cache[layer]`/`v_cache[layer]` are
[kv_heads, num_slots, head_dim], and in debug mode every write is checked
against the slot owners `out_owners` before it lands (DESIGN invariant 1).
"""
from __future__ import annotations

from typing import Protocol

import torch


class BatchLayout(Protocol):
    extend_lens: list[int]
    kv_lens: list[int]
    kv_slots: list[torch.Tensor]   # CPU int64, per request
    out_slots: torch.Tensor        # [num_tokens] int64 (CPU)
    out_owners: torch.Tensor | None


class AttentionBackend:
    """One per model: the softmax scale and the device are fixed for its life."""

    name = "base"

    def __init__(self, scale: float, device: torch.device | str):
        self.scale = scale
        self.device = torch.device(device)

    def prepare(self, batch: BatchLayout):
        raise NotImplementedError

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: int, pool, metadata) -> torch.Tensor:
        """q [tokens, heads, dim], k/v [tokens, kv_heads, dim] of the new tokens -> [tokens, heads, dim]."""
        raise NotImplementedError
