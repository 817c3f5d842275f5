"""What one forward step computes: a flat batch of new tokens from several
requests, and where each request's keys and values live in the KV pool."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ForwardBatch:
    """A varlen batch. Request i contributes `extend_lens[i]` new tokens (a prefill
    chunk, or 1 for decode) that attend to its `kv_lens[i]` tokens in total
    (cached prefix + earlier chunks + the new ones)."""

    input_ids: torch.Tensor      # [num_tokens] int64
    positions: torch.Tensor      # [num_tokens] int64; [3, num_tokens] (t, h, w) for M-RoPE models (VLMs)
    out_slots: torch.Tensor      # [num_tokens] int64: KV slot each new token's K/V is written to
    extend_lens: list[int]       # per request
    kv_lens: list[int]           # per request
    kv_slots: list[torch.Tensor]  # per request: [kv_len] int64 slots of all its tokens, in order
    logits_indices: torch.Tensor  # [num_sampled] rows of the flat batch whose logits are needed
    input_embeds: torch.Tensor | None = None       # [num_tokens, hidden]: replaces embedding lookup (VLMs)
    out_owners: torch.Tensor | None = None         # [num_tokens] pool owner of each out slot (debug checks)
    # What the model's attention backend made of this batch (`AttentionBackend.prepare`, once per step).
    attn_metadata: object = None

    def to(self, device: torch.device) -> "ForwardBatch":
        if device.type == "cpu":
            return self
        move = lambda t: None if t is None else t.to(device, non_blocking=True)  # noqa: E731
        # Slot lists and owners stay on the CPU: the attention backend sends what its kernels read.
        return ForwardBatch(
            input_ids=move(self.input_ids), positions=move(self.positions), out_slots=self.out_slots,
            extend_lens=self.extend_lens, kv_lens=self.kv_lens, kv_slots=self.kv_slots,
            logits_indices=move(self.logits_indices), input_embeds=move(self.input_embeds),
            out_owners=self.out_owners, attn_metadata=self.attn_metadata,
        )

    @property
    def num_requests(self) -> int:
        return len(self.extend_lens)

    @classmethod
    def build(
        cls,
        token_ids: list[list[int]],
        start_positions: list[int],
        kv_slots: list[torch.Tensor],
        sample_rows: list[bool],
        owner_ids: list[int] | None = None,
        logit_counts: list[int] | None = None,
    ) -> "ForwardBatch":
        """token_ids[i]: the new tokens of request i, starting at position
        start_positions[i]; kv_slots[i]: slots of all its tokens, the new ones last.
        logit_counts[i]: how many of a sampled request's last rows need logits (default 1;
        a step verifying k drafted tokens needs k + 1)."""
        extend_lens = [len(t) for t in token_ids]
        kv_lens = [int(s.numel()) for s in kv_slots]
        for e, start, k in zip(extend_lens, start_positions, kv_lens):
            assert e >= 1 and start + e == k, "kv slots must cover the prefix and the new tokens"
        flat_ids = [t for ids in token_ids for t in ids]
        positions = torch.cat([torch.arange(s, s + e) for s, e in zip(start_positions, extend_lens)])
        out_slots = torch.cat([s[k - e:] for s, k, e in zip(kv_slots, kv_lens, extend_lens)])
        ends = torch.tensor(extend_lens).cumsum(0) - 1
        if logit_counts is not None and any(c > 1 for c, s in zip(logit_counts, sample_rows) if s):
            logits_indices = torch.cat([torch.arange(end - c + 1, end + 1) for end, c, s in
                                        zip(ends.tolist(), logit_counts, sample_rows) if s])
        else:
            logits_indices = ends[torch.tensor(sample_rows, dtype=torch.bool)] if any(sample_rows) else ends[:0]
        return cls(
            input_ids=torch.tensor(flat_ids, dtype=torch.int64),
            positions=positions,
            out_slots=out_slots,
            extend_lens=extend_lens,
            kv_lens=kv_lens,
            kv_slots=kv_slots,
            logits_indices=logits_indices,
            out_owners=None if owner_ids is None else torch.repeat_interleave(
                torch.tensor(owner_ids, dtype=torch.int64), torch.tensor(extend_lens)),
        )
