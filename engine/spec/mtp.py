"""Drafts from a model's multi-token-prediction (MTP, NextN) layers: GLM-OCR's, as the
checkpoint ships them (`engine/models/glm_ocr.py`, `mtp_forward`).

An MTP layer at position p reads the model's final-norm hidden state at p and the token
at p + 1, keeps its own K/V (one more layer of the KV pool, in the request's own slots),
and predicts the token at p + 2. So it runs where the model's hidden states are: in the
step that computed them, after the tokens are chosen and before they are applied
(`Drafter.after_step`, from `Engine.step` through `DraftPolicy.after_step`), which is
when every row's next token is known:

1. catch-up: over the positions the step computed and keeps (a prefill chunk's, or the
   pending token and the drafted tokens the model accepted), with the token after each
   (the prompt's, the accepted drafts, and the step's new token). This writes the MTP
   layer's K/V for them, so its attention sees the whole sequence, and the last row's
   prediction is the first drafted token: the one after the step's new token;
2. chain: each further drafted token is one more MTP step at the next position, fed
   the previous step's output hidden state (the model's is not known there yet) and the
   token it drafted, as vLLM and SGLang chain one MTP layer `num_speculative_tokens` /
   `--speculative-num-steps` times. Its K/V goes to scratch slots of the request's,
   freed at once: the next step's catch-up writes those positions properly.

The drafts are held on the request (`DraftState.held`) for the scheduler's next
`propose`; they are greedy (argmax of the MTP head), one chain, and verified like any
other (engine/spec/verify.py), so the output is the model's own, drafts or none.

Positions a request took from the prefix cache keep the MTP K/V the request that computed
them wrote; a request that finished in the step that computed its last position leaves
that position's MTP K/V unwritten, so a later request sharing it drafts from stale K/V
there: fewer drafts accepted, never a different output.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from engine.forward_batch import ForwardBatch
from engine.spec.drafters import Drafter

if TYPE_CHECKING:
    from engine.request import Request


@dataclass
class StepRows:
    """What one step computed for a request the MTP drafter serves."""

    req: Request
    start: int                 # the position of its first row in the step
    first_row: int             # that row's index in the step's flat batch
    next_tokens: list[int]     # the token after each row the step keeps, in order
    new_tokens: int            # tokens the step appends to its output (0: a prefill chunk)


class MtpDrafter(Drafter):
    name = "mtp"

    def __init__(self, num_tokens: int, model, pool):
        super().__init__(num_tokens)
        if not model.mtp_layers:
            raise ValueError("this model has no multi-token-prediction layers (num_nextn_predict_layers is 0)")
        self.model = model
        self.pool = pool
        model.capture_hidden = True

    def propose(self, req: Request, k: int) -> list[int]:
        held, req.draft.held = req.draft.held, None
        if held is None or held[0] != len(req.output_ids):
            return []
        return held[1][:k]

    def after_step(self, scheduled, starts: list[int], verdicts: list) -> None:
        self.observe(self.rows(scheduled, starts, verdicts))

    def rows(self, scheduled, starts: list[int], verdicts: list) -> list[StepRows]:
        """The rows of the step this drafter reads: requests it drafts for, the positions each
        keeps (the step's tokens up to the drafted ones the model rejected) and the token after
        each."""
        rows, first_row = [], 0
        for req, n, start, verdict in zip(scheduled.requests, scheduled.extend_lens, starts, verdicts):
            drafter = req.draft.drafter if req.draft is not None else None
            if drafter is not None and drafter.preparer is self and req.params.speculative and not req.finished:
                pending = n - len(req.spec_ids)
                if verdict is None:    # a prefill chunk: the prompt holds every next token
                    next_tokens, new = req.token_ids(start + 1, start + n + 1), 0
                else:
                    next_tokens, new = req.token_ids(start + 1, start + pending) + verdict.tokens, len(verdict.tokens)
                rows.append(StepRows(req, start, first_row, next_tokens, new))
            first_row += n
        return rows

    @torch.inference_mode()
    def observe(self, rows: list[StepRows]) -> None:
        """After a forward pass (whose hidden states the model captured) and the choice of its
        tokens, before they are applied: catch up the MTP layer over the kept rows and draft."""
        rows = [r for r in rows if r.next_tokens]
        if not rows:
            return
        hidden_all = self.model.captured_hidden
        self.model.captured_hidden = None
        sampled = [r.new_tokens > 0 for r in rows]
        batch, first = self._batch([r.req for r in rows], [r.start for r in rows], [r.next_tokens for r in rows],
                                   [r.req.kv_slots[:r.start + len(r.next_tokens)] for r in rows], sampled)
        hidden = torch.cat([hidden_all[r.first_row:r.first_row + len(r.next_tokens)] for r in rows])
        h, logits = self.model.mtp_forward(batch, hidden, self.pool, first, step=0)
        drafting = [r for r, s in zip(rows, sampled) if s]
        if not drafting:
            return
        drafts = [[t] for t in logits.argmax(dim=-1).tolist()]
        last = h[batch.logits_indices.to(h.device)]
        self._chain(drafting, drafts, last)
        for r, draft in zip(drafting, drafts):
            r.req.draft.held = (len(r.req.output_ids) + r.new_tokens, draft)

    def _chain(self, rows: list[StepRows], drafts: list[list[int]], last: torch.Tensor) -> None:
        """Extend each draft by one MTP step at a time, on scratch K/V slots of the request's."""
        wanted = []
        for r in rows:
            room = r.req.max_output_len - len(r.req.output_ids) - r.new_tokens - 1
            wanted.append(max(0, min(self.num_tokens, room) - 1))   # steps after the first token
        scratch = [self.pool.alloc(n, r.req.owner_id) if n else None for r, n in zip(rows, wanted)]
        try:
            for step in range(1, max(wanted, default=0) + 1):
                active = [i for i, (n, s) in enumerate(zip(wanted, scratch)) if s is not None and n >= step]
                if not active:
                    break
                reqs = [rows[i].req for i in active]
                kept = [rows[i].start + len(rows[i].next_tokens) for i in active]
                batch, first = self._batch(
                    reqs, [k + step - 1 for k in kept], [[drafts[i][-1]] for i in active],
                    [torch.cat([rows[i].req.kv_slots[:k], scratch[i][:step]]) for i, k in zip(active, kept)],
                    [True] * len(active))
                h, logits = self.model.mtp_forward(batch, last[active], self.pool, first, step=step)
                for i, token in zip(active, logits.argmax(dim=-1).tolist()):
                    drafts[i].append(token)
                last = last.clone()
                last[active] = h
        finally:
            for r, s in zip(rows, scratch):
                if s is not None:
                    self.pool.free(s, r.req.owner_id)

    def _batch(self, reqs: list[Request], starts: list[int], tokens: list[list[int]], slots: list[torch.Tensor],
               sample: list[bool]) -> tuple[ForwardBatch, torch.Tensor]:
        batch = ForwardBatch.build(tokens, starts, slots, sample,
                                   owner_ids=[r.owner_id for r in reqs] if self.pool.debug else None)
        first = batch.positions == 0
        if self.model.is_multimodal:
            from engine.multimodal.batch_inputs import chunk_positions

            batch.positions = torch.cat([chunk_positions(r, s, len(t)) for r, s, t in zip(reqs, starts, tokens)],
                                        dim=1)
        return batch, first
