"""The torch attention backend: the CPU path (and a fallback anyone can read).

It keeps the engine's original arithmetic exactly, so CPU outputs match Hugging
Face bit for bit as before: K/V written by `KVPool.write`; a step of decode
rows only is one padded batched call; otherwise decode rows go together and
each prefill/extend request has its own SDPA call (`kernels.paged_attention`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels.attention.base import AttentionBackend, BatchLayout
from kernels.paged_attention import decode_attention, extend_attention


@dataclass
class TorchAttentionMetadata:
    out_slots: torch.Tensor               # [num_tokens] (CPU; the pool moves them)
    out_owners: torch.Tensor | None
    all_decode: bool
    decode_index: torch.Tensor | None     # [num_decode] rows of the flat batch that decode
    decode_slot_table: torch.Tensor | None  # [num_decode, max_kv_len] int64, padded with slot 0
    decode_mask: torch.Tensor | None      # [num_decode, 1, 1, max_kv_len] bool, True = attend
    extends: list[tuple[int, int, torch.Tensor]]  # (first row, extend_len, kv slots) per request with > 1 new tokens


class TorchAttentionBackend(AttentionBackend):
    name = "torch"

    def prepare(self, batch: BatchLayout) -> TorchAttentionMetadata:
        extend_lens, kv_lens = batch.extend_lens, batch.kv_lens
        starts = [0]
        for e in extend_lens:
            starts.append(starts[-1] + e)
        decode_rows = [i for i, e in enumerate(extend_lens) if e == 1]
        table = mask = index = None
        if decode_rows:
            max_len = max(kv_lens[i] for i in decode_rows)
            table = torch.zeros(len(decode_rows), max_len, dtype=torch.int64)
            lens = torch.tensor([kv_lens[i] for i in decode_rows])
            for j, i in enumerate(decode_rows):
                table[j, : kv_lens[i]] = batch.kv_slots[i]
            mask = (torch.arange(max_len)[None, :] < lens[:, None])[:, None, None, :]
            table, mask = table.to(self.device, non_blocking=True), mask.to(self.device, non_blocking=True)
            index = torch.tensor([starts[i] for i in decode_rows], device=self.device)
        extends = [(starts[i], e, batch.kv_slots[i].to(self.device, non_blocking=True))
                   for i, e in enumerate(extend_lens) if e > 1]
        return TorchAttentionMetadata(
            out_slots=batch.out_slots, out_owners=batch.out_owners,
            all_decode=len(decode_rows) == len(extend_lens), decode_index=index,
            decode_slot_table=table, decode_mask=mask, extends=extends)

    def forward(self, q, k, v, layer: int, pool, metadata: TorchAttentionMetadata) -> torch.Tensor:
        m = metadata
        pool.write(layer, m.out_slots, k, v, m.out_owners)
        k_cache, v_cache = pool.k_cache[layer], pool.v_cache[layer]
        if m.all_decode:
            return decode_attention(q, k_cache, v_cache, m.decode_slot_table, m.decode_mask, self.scale)
        out = torch.empty_like(q)
        if m.decode_index is not None:
            out[m.decode_index] = decode_attention(q[m.decode_index], k_cache, v_cache, m.decode_slot_table,
                                                   m.decode_mask, self.scale)
        for start, extend_len, slots in m.extends:
            out[start : start + extend_len] = extend_attention(q[start : start + extend_len], k_cache, v_cache,
                                                               slots, self.scale)
        return out
