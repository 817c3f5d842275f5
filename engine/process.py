"""The last stage of an engine step (schedule -> run -> decide -> process): each request's chosen
tokens are appended one by one, exactly as decoding one token a step would append them.

For each scheduled request, with its verdict from `engine/spec/verify.py` (`decide`):
- none (a prefill chunk that samples nothing): its computed count moves and the prefix cache
  takes the chunk's K/V;
- a verdict: the K/V of drafted tokens the model rejected goes back to the pool at once, the
  draft is counted (engine totals and per-method metrics), then each kept token advances the
  request's sampler counts (penalties), its grammar matcher and its stop window, and the
  request finishes at the first token that ends it (a stop, the grammar's end, the loop
  guard's repetition, the length limit). The tokens after that one are dropped, as are their
  drafts' K/V when it leaves the scheduler (`Scheduler.remove` caches only the tokens it
  computed and kept).

Speculative decoding's part (engine/spec/policy.py) is called at three points: each verdict
(`on_verdict`: the draft is counted under its method, house-ocr's rescoring keeps its
scores), before a request's output is handed back (`holds_output`: a request the model may
rescore hands back nothing until it finishes) and when it finishes (`on_finish`, while its
K/V is still its own; `replace_output` once it has left the scheduler).
"""
from __future__ import annotations

import time

from engine.loop_guard import REPETITION_FINISH_REASON
from engine.request import Request, RequestOutput
from engine.spec.policy import DraftPolicy
from engine.spec.verify import Verdict


class StepProcessor:
    def __init__(self, requests: dict[str, Request], scheduler, pool, metrics, drafts: DraftPolicy):
        self.requests = requests           # the engine's: a finished request leaves it here
        self.scheduler = scheduler
        self.pool = pool
        self.metrics = metrics
        self.drafts = drafts

    def apply(self, scheduled, verdicts: list[Verdict | None]) -> list[RequestOutput]:
        outputs: list[RequestOutput] = []
        now = time.monotonic()
        for req, n, verdict in zip(scheduled.requests, scheduled.extend_lens, verdicts):
            if verdict is None:
                req.num_computed += n
                self.scheduler.cache_progress(req)
                continue
            self.drafts.on_verdict(req, verdict)   # before the tokens: a finishing one's rescoring reads it
            if req.spec_ids:
                self._drop_rejected(req, verdict)
            else:
                req.num_computed += n
            for j, token in enumerate(verdict.tokens):
                self._append_token(req, token, verdict.logprobs[j], now)
                if req.finished:
                    break
            self._emit(req, outputs)
        return outputs

    def _emit(self, req: Request, outputs: list[RequestOutput]) -> None:
        if req.finished:
            del self.requests[req.request_id]
        elif self.drafts.holds_output(req):
            return   # held: the model may still replace this output when it finishes
        outputs.append(req.take_output())

    def _drop_rejected(self, req: Request, verdict: Verdict) -> None:
        """K/V written for the drafted tokens the model rejected goes back to the pool."""
        accepted = len(verdict.tokens) - 1
        # the pending tokens (one, or the prompt's last chunk) + the drafted tokens that held
        keep = req.num_computed + req.num_pending + accepted
        extra = req.kv_slots[keep:]
        if extra.numel():
            self.pool.free(extra, req.owner_id)
        req.kv_slots = req.kv_slots[:keep]
        req.num_computed = keep
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
        # every kept token goes through the guard, so a drafted run stops where a one-token step would
        looped = req.loop_guard is not None and req.loop_guard.append(token_id)
        if looped and reason in (None, "length"):   # a stop on this token wins; the length limit does not
            if reason is None:
                req.pending_text += req.stop_checker.flush(REPETITION_FINISH_REASON)
            reason = req.stop_checker.finish_reason = REPETITION_FINISH_REASON
        if reason is None and len(req.output_ids) >= req.max_output_len:
            reason = "length"
            req.pending_text += req.stop_checker.flush()
        if reason is not None:
            self._finish(req, reason)

    def _finish(self, req: Request, reason: str) -> None:
        req.finish_reason = reason
        # the model may keep its draft instead (house-ocr): decided while the K/V is the request's,
        # replaced once the cache has taken the K/V of the tokens actually computed
        rescored = self.drafts.on_finish(req, reason)
        self.scheduler.remove(req)
        if rescored is not None:
            self.drafts.replace_output(req, rescored)
            if rescored.kept_draft:   # a whole reading, ended by its EOS, instead of a loop's start
                req.finish_reason = "stop"
        if self.metrics is not None:
            self.metrics.on_request_finished(len(req.prompt_ids), len(req.output_ids), req.finish_reason,
                                             loop_guarded=req.loop_guard is not None,
                                             loop_stopped=reason == REPETITION_FINISH_REASON)
