"""The Triton attention backend: the CUDA path (and, under TRITON_INTERPRET=1,
a CPU test of it).

`prepare` flattens the batch once per step into CSR form on the device:
`qo_indptr` (where each request's new tokens start in the flat batch),
`kv_indptr`/`kv_indices` (each request's slots, prefix first). Each layer then
stores the new K/V with `store_kv` and runs one kernel for the whole batch:
split-K decode when every request has one new token, else the extend kernel,
whose causal-over-new, full-over-prefix rule also serves the decode rows of a
mixed step, chunked prefill and draft verification.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from kernels.attention.base import AttentionBackend, BatchLayout
from kernels.decode_attention import choose_num_splits, decode_attention
from kernels.extend_attention import extend_attention
from kernels.store_kv import store_kv
from kernels.triton_utils import interpreting


@dataclass
class TritonAttentionMetadata:
    out_slots_cpu: torch.Tensor | None  # for the debug owner check (bookkeeping is on the CPU)
    out_owners: torch.Tensor | None
    out_slots: torch.Tensor             # [num_tokens] int64, device
    qo_indptr: torch.Tensor | None      # [num_requests + 1] int32, device (unused by decode-only steps)
    kv_indptr: torch.Tensor             # [num_requests + 1] int32, device
    kv_indices: torch.Tensor            # [sum(kv_lens)] int32, device
    all_decode: bool
    max_extend_len: int
    num_splits: int                     # decode only


class TritonAttentionBackend(AttentionBackend):
    name = "triton"

    def __init__(self, scale: float, device: torch.device | str, num_kv_heads: int = 1):
        super().__init__(scale, device)
        if self.device.type != "cuda" and not interpreting():
            raise RuntimeError(f"the triton attention backend runs on CUDA (device {self.device} given); on CPU it "
                               "runs only under TRITON_INTERPRET=1, for tests: use attention_backend='torch'")
        self.num_kv_heads = num_kv_heads

    def prepare(self, batch: BatchLayout) -> TritonAttentionMetadata:
        extend_lens, kv_lens = batch.extend_lens, batch.kv_lens
        # Built on the CPU and sent in one copy each (non-blocking, so the host runs ahead).
        qo_indptr = torch.tensor([0] + extend_lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        kv_indptr = torch.tensor([0] + kv_lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        kv_indices = torch.cat(batch.kv_slots).to(torch.int32)
        all_decode = all(e == 1 for e in extend_lens)
        move = lambda t: t.to(self.device, non_blocking=True)  # noqa: E731
        return TritonAttentionMetadata(
            out_slots_cpu=batch.out_slots, out_owners=batch.out_owners, out_slots=move(batch.out_slots),
            qo_indptr=move(qo_indptr), kv_indptr=move(kv_indptr), kv_indices=move(kv_indices),
            all_decode=all_decode, max_extend_len=max(extend_lens, default=0),
            num_splits=choose_num_splits(len(extend_lens), max(kv_lens, default=0), self.num_kv_heads)
            if all_decode else 1)

    def forward(self, q, k, v, layer: int, pool, metadata: TritonAttentionMetadata) -> torch.Tensor:
        m = metadata
        # The owner check KVPool.write makes (a CPU table: no device sync). A step replayed from a
        # CUDA graph has no CPU slot list here: its runner checks before the replay.
        if pool.debug and m.out_slots_cpu is not None:
            pool._check_write_owners(m.out_slots_cpu, m.out_owners)
        k_cache, v_cache = pool.k_cache[layer], pool.v_cache[layer]
        # q, k, v may be strided views of one fused projection: the kernels take their strides.
        store_kv(k, v, k_cache, v_cache, m.out_slots)
        if m.all_decode:
            return decode_attention(q, k_cache, v_cache, m.kv_indptr, m.kv_indices, self.scale, m.num_splits)
        return extend_attention(q, k_cache, v_cache, m.qo_indptr, m.kv_indptr, m.kv_indices, self.scale,
                                m.max_extend_len)
