"""Decode steps replayed from CUDA graphs.

A decode step of a small model is mostly kernel launches: SmolLM2 runs ~20
per layer for one token per request. Captured once per batch-size bucket, a
step becomes one graph launch. What a graph reads must live at fixed
addresses, so a step is copied into static buffers first and padded up to its
bucket:

| padding row has | so that                                                  |
|-----------------|----------------------------------------------------------|
| token 0, pos 0  | every kernel computes something finite                   |
| out slot 0      | its K/V land on the reserved pad slot, never a real one  |
| no keys         | decode attention gives it zeros (the kernel's empty rule)|

Only text models on the Triton backend use graphs (the kernels read the
batch through CSR indices of any length, while the torch path pads a table
to the longest request). Slot owners are checked here, on the CPU, before the
replay, since the backend's own check does not run inside a replay. With
`capture=False` the same static-buffer step runs eagerly: how the padding and
buffers are tested without a GPU.
"""
from __future__ import annotations

import torch

from engine.forward_batch import ForwardBatch
from kernels.attention.triton_backend import TritonAttentionMetadata
from kernels.decode_attention import choose_num_splits


def batch_sizes(max_batch: int) -> list[int]:
    sizes = [s for s in (1, 2, 4, 8) if s < max_batch] + list(range(16, max_batch, 16))
    return sizes + [max_batch]


class DecodeGraphs:
    def __init__(self, model, pool, max_batch: int, max_context: int, capture: bool):
        self.model, self.pool, self.capture = model, pool, capture
        self.sizes = batch_sizes(max_batch)
        device = pool.device
        self.input_ids = torch.zeros(max_batch, dtype=torch.int64, device=device)
        self.positions = torch.zeros(max_batch, dtype=torch.int64, device=device)
        self.out_slots = torch.zeros(max_batch, dtype=torch.int64, device=device)
        self.kv_indptr = torch.zeros(max_batch + 1, dtype=torch.int32, device=device)
        self.kv_indices = torch.zeros(max_batch * max_context, dtype=torch.int32, device=device)
        self.logits_indices = torch.arange(max_batch, device=device)
        self.max_context = max_context
        self.graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor]] = {}
        self._mempool = None

    def can_run(self, batch: ForwardBatch) -> bool:
        n = batch.num_requests
        return (n <= self.sizes[-1] and all(e == 1 for e in batch.extend_lens) and batch.input_embeds is None
                and batch.positions.dim() == 1 and batch.logits_indices.numel() == n
                and sum(batch.kv_lens) <= self.kv_indices.numel())

    def run(self, batch: ForwardBatch) -> torch.Tensor:
        """Logits [num_requests, vocab] of a decode step (`can_run` must hold)."""
        n = batch.num_requests
        size = next(s for s in self.sizes if s >= n)
        if self.pool.debug:
            self.pool._check_write_owners(batch.out_slots, batch.out_owners)
        total = sum(batch.kv_lens)
        indptr = torch.tensor([0] + batch.kv_lens, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        self.input_ids[:n].copy_(batch.input_ids, non_blocking=True)
        self.positions[:n].copy_(batch.positions, non_blocking=True)
        self.out_slots[:n].copy_(batch.out_slots, non_blocking=True)
        self.kv_indptr[: n + 1].copy_(indptr, non_blocking=True)
        self.kv_indices[:total].copy_(torch.cat(batch.kv_slots), non_blocking=True)
        self.input_ids[n:size].zero_()
        self.positions[n:size].zero_()
        self.out_slots[n:size].zero_()          # the pad slot
        self.kv_indptr[n + 1 : size + 1].fill_(total)  # no keys
        if not self.capture:
            return self.model.forward(self._static_batch(size), self.pool)[:n]
        if size not in self.graphs:
            self.graphs[size] = self._capture(size)
        graph, logits = self.graphs[size]
        graph.replay()
        return logits[:n]

    def _static_batch(self, size: int) -> ForwardBatch:
        metadata = TritonAttentionMetadata(
            out_slots_cpu=None, out_owners=None, out_slots=self.out_slots[:size], qo_indptr=None,
            kv_indptr=self.kv_indptr[: size + 1], kv_indices=self.kv_indices, all_decode=True, max_extend_len=1,
            # fixed per bucket (a graph bakes it in): enough splits for the longest context
            num_splits=choose_num_splits(size, self.max_context, self.pool.num_kv_heads))
        return ForwardBatch(
            input_ids=self.input_ids[:size], positions=self.positions[:size], out_slots=self.out_slots[:size],
            extend_lens=[1] * size, kv_lens=[], kv_slots=[], logits_indices=self.logits_indices[:size],
            attn_metadata=metadata)

    def _capture(self, size: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
        batch = self._static_batch(size)
        # Warm-up off the capture stream (Triton compiles, cuBLAS picks its kernels). It runs the
        # real step already in the buffers, so its K/V writes are the ones the replay repeats.
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                self.model.forward(batch, self.pool)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._mempool):
            logits = self.model.forward(batch, self.pool)
        self._mempool = graph.pool()
        return graph, logits
