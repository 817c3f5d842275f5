"""The last stage of an engine step (schedule -> run -> decide -> process): each request's chosen
tokens are appended one by one, exactly as decoding one token a step would append them.

For each scheduled request, with its verdict from `engine/spec/verify.py` (`decide`):
- none (a prefill chunk that samples nothing): its computed count moves and the prefix cache
  takes the chunk's K/V;
- a verdict: the K/V of drafted tokens the model rejected goes back to the pool at once, the
  draft is counted (engine totals and per-method metrics), then each kept token advances the
  request's sampler counts (penalties), its grammar matcher and its stop window, and the
  request finishes at the first token that ends it (a stop, the grammar's end, the length
  limit). The tokens after that one are dropped, as are their drafts' K/V when it leaves the
  scheduler (`Scheduler.remove` caches only the tokens it computed and kept).

A model that compares a finished output with a draft of its own (house-ocr's CTC rescoring)
does so through its hook (`engine/models/hooks.py`, `rescored_output`) while the request's K/V
is still its own; a request it may rescore is held (nothing handed back) until it finishes.
"""
from __future__ import annotations

import time

from engine.request import Request, RequestOutput
from engine.sampler import TokenLogprobs
from engine.spec.verify import Verdict
from engine.stop import StopChecker


class StepProcessor:
    def __init__(self, requests: dict[str, Request], scheduler, pool, model, metrics, eos_token_ids: set[int],
                 detok_tokenizer):
        self.requests = requests           # the engine's: a finished request leaves it here
        self.scheduler = scheduler
        self.pool = pool
        self.model = model
        self.metrics = metrics
        self.eos_token_ids = eos_token_ids
        self.detok_tokenizer = detok_tokenizer
        self.num_draft_tokens = 0            # speculative decoding: drafted tokens verified ...
        self.num_accepted_draft_tokens = 0   # ... and how many of them the model agreed with
        self.num_rescored = 0                # finished lines whose output differed from the draft ...
        self.num_draft_chosen = 0            # ... and how many kept the draft instead

    def apply(self, scheduled, verdicts: list[Verdict | None]) -> list[RequestOutput]:
        outputs: list[RequestOutput] = []
        now = time.monotonic()
        for req, n, verdict in zip(scheduled.requests, scheduled.extend_lens, verdicts):
            if verdict is None:
                req.num_computed += n
                self.scheduler.cache_progress(req)
                continue
            if req.spec_ids:
                self._settle_draft(req, verdict)
            else:
                req.num_computed += n
            for j, token in enumerate(verdict.tokens):
                if req.rescore:    # before the token: a finishing token's rescoring reads them
                    req.output_log_probs.append(verdict.rescore_log_probs[j])
                self._append_token(req, token, verdict.logprobs[j], now)
                if req.finished:
                    break
            self._emit(req, outputs)
        return outputs

    def _emit(self, req: Request, outputs: list[RequestOutput]) -> None:
        if req.finished:
            del self.requests[req.request_id]
        elif req.rescore:
            return   # held: the model may still replace this output when it finishes
        outputs.append(req.take_output())

    def _settle_draft(self, req: Request, verdict: Verdict) -> None:
        """K/V written for the drafted tokens the model rejected goes back to the pool; count."""
        draft, accepted = req.spec_ids, len(verdict.tokens) - 1
        # the pending tokens (one, or the prompt's last chunk) + the drafted tokens that held
        keep = req.num_computed + req.num_pending + accepted
        extra = req.kv_slots[keep:]
        if extra.numel():
            self.pool.free(extra, req.owner_id)
        req.kv_slots = req.kv_slots[:keep]
        req.num_computed = keep
        req.num_draft_proposed += len(draft)
        req.num_draft_accepted += accepted
        self.num_draft_tokens += len(draft)
        self.num_accepted_draft_tokens += accepted
        if self.metrics is not None:
            self.metrics.on_draft_verified(len(draft), accepted)
            self.metrics.on_spec_verified(req.spec_method, len(draft), accepted)
        req.spec_ids = []

    def _append_token(self, req: Request, token_id: int, lp, now: float) -> None:
        req.output_ids.append(token_id)
        req.sampler_state.append(token_id)
        grammar_done = False
        if req.grammar_state is not None:
            accepted = req.grammar_state.accept(token_id)
            assert accepted, "the grammar mask admitted a token its matcher rejects"
            grammar_done = req.grammar_state.is_terminated()
        result = req.stop_checker.append(token_id, len(req.output_ids))
        req.pending_text += result.delta_text
        req.pending_token_ids.append(token_id)
        if lp is not None:
            req.pending_logprobs.append(lp)
        if self.metrics is not None:
            if req.first_token_time is None:
                self.metrics.on_first_token(now - req.arrival_time)
            else:
                self.metrics.on_inter_token(now - req.last_token_time)
        if req.first_token_time is None:
            req.first_token_time = now
        req.last_token_time = now
        reason = result.finish_reason
        if reason is None and grammar_done:
            reason = "stop"  # the grammar accepted a stop token the stop checker does not know
            req.pending_text += req.stop_checker.flush("stop")
        if reason is None and len(req.output_ids) >= req.max_output_len:
            reason = "length"
            req.pending_text += req.stop_checker.flush()
        if reason is not None:
            self._finish(req, reason)

    def _finish(self, req: Request, reason: str) -> None:
        req.finish_reason = reason
        # the model may keep its draft instead (house-ocr); decided while the K/V is the request's,
        # replaced once the cache has taken the K/V of the tokens actually computed
        verdict = (self.model.rescored_output(req, self.pool, self.eos_token_ids)
                   if req.rescore and reason == "stop" else None)
        if verdict is not None:
            self.num_rescored += 1
            self.num_draft_chosen += verdict.kept_draft
            if self.metrics is not None:
                self.metrics.on_rescored(verdict.kept_draft)
        self.scheduler.remove(req)
        if verdict is not None and verdict.kept_draft:
            self._replace_output(req, verdict.tokens, verdict.logprobs)
        if self.metrics is not None:
            self.metrics.on_request_finished(len(req.prompt_ids), len(req.output_ids), reason)

    def _replace_output(self, req: Request, chosen: list[int], logprobs: list[TokenLogprobs]) -> None:
        """Hand back `chosen` (and its tokens' `logprobs`, where asked for) instead of what was
        decoded (nothing was handed back yet)."""
        checker = StopChecker(req.params, self.eos_token_ids, self.detok_tokenizer, req.prompt_ids)
        text = ""
        for i, token in enumerate(chosen):
            result = checker.append(token, i + 1)
            text += result.delta_text
            if result.finish_reason is not None:
                break
        req.output_ids = chosen
        req.stop_checker = checker
        req.pending_text, req.pending_token_ids, req.pending_logprobs = text, list(chosen), logprobs
