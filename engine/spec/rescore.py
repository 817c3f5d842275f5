"""House-ocr's CTC rescoring: a finished greedy line keeps the model's own draft of it (the CTC
head's reading) where that scores higher under both heads. One object, `Rescorer`, built by
the drafting policy (policy.py) where the model rescores (`ModelHooks.rescores_output`) and
the engine allows it (`EngineConfig.ctc_rescoring`); the scoring itself is the model's
(`rescored_output`, engine/models/house_ocr.py).

Its hooks, in a request's life:

| hook           | called                                  | does                                  |
|----------------|-----------------------------------------|---------------------------------------|
| wants          | the request is built (policy.new_state) | whether it may be rescored: no stop   |
|                |                                         | conditions of its own (its text may   |
|                |                                         | end before the draft's); it is, only  |
|                |                                         | if the model drafted it too           |
| record         | each verdict, before its tokens are     | keeps log P of each chosen token      |
|                | appended (engine/process.py)            | (verify.py computes them from the     |
|                |                                         | raw greedy rows)                      |
| holds          | after each step                         | nothing is handed back before the     |
|                |                                         | request finishes: it may be replaced  |
| on_finish      | it stops, its K/V still its own         | asks the model; counts the verdict    |
| replace_output | it has left the scheduler (the cache    | hands back the draft instead of what  |
|                | took the K/V of the tokens computed)    | was decoded, where the model kept it  |
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from engine.loop_guard import REPETITION_FINISH_REASON, LoopGuard
from engine.models.hooks import FinishedOutput, Rescored
from engine.stop import StopChecker

if TYPE_CHECKING:
    from engine.request import Request
    from engine.sampling_params import SamplingParams
    from engine.spec.state import DraftState
    from engine.spec.verify import Verdict


class Rescorer:
    def __init__(self, model, pool, eos_token_ids: set[int], detok_tokenizer, metrics=None):
        self.model = model
        self.pool = pool
        self.eos_token_ids = eos_token_ids
        self.detok_tokenizer = detok_tokenizer
        self.metrics = metrics
        self.num_rescored = 0        # finished lines whose output differed from the draft ...
        self.num_draft_chosen = 0    # ... and how many kept the draft instead

    @staticmethod
    def wants(params: SamplingParams) -> bool:
        """A request with stop conditions of its own keeps plain greedy output."""
        return not (params.stop or params.stop_regex or params.stop_token_ids or params.ignore_eos)

    @staticmethod
    def record(state: DraftState, verdict: Verdict) -> None:
        state.output_log_probs += verdict.rescore_log_probs

    @staticmethod
    def holds(req: Request) -> bool:
        return req.draft is not None and req.draft.rescore

    def on_finish(self, req: Request, reason: str) -> Rescored | None:
        """The model's verdict on a rescored request that stopped (not one cut by its length).
        One the loop guard stopped keeps the model's draft instead, unless the draft loops too:
        unguarded, the loop would have run on, and where it ended the draft would have been
        weighed against a reading its CTC head cannot spell; either way the draft is the line."""
        state = req.draft
        looped = reason == REPETITION_FINISH_REASON
        if state is None or not state.rescore or reason not in ("stop", REPETITION_FINISH_REASON):
            return None
        if looped and _draft_loops(req):
            return None
        # the tokens after the one that finished the request were dropped, and so are their scores
        del state.output_log_probs[len(req.output_ids):]
        verdict = self.model.rescored_output(
            FinishedOutput(prompt_ids=req.prompt_ids, output_ids=req.output_ids,
                           output_log_probs=state.output_log_probs, draft_ids=state.model_ids,
                           kv_slots=req.kv_slots, multimodal=req.multimodal, max_output_len=req.max_output_len,
                           num_top_logprobs=req.params.logprobs, logprobs=req.pending_logprobs,
                           looped=looped),
            self.pool, self.eos_token_ids)
        if verdict is not None:
            self.num_rescored += 1
            self.num_draft_chosen += verdict.kept_draft
            if self.metrics is not None:
                self.metrics.on_rescored(verdict.kept_draft)
        return verdict

    def replace_output(self, req: Request, rescored: Rescored) -> None:
        """Where the model kept its draft, hand back the draft's tokens (and their logprobs, where
        asked for) instead of what was decoded (nothing was handed back yet)."""
        if not rescored.kept_draft:
            return
        chosen = rescored.tokens
        checker = StopChecker(req.params, self.eos_token_ids, self.detok_tokenizer, req.prompt_ids)
        text = ""
        for i, token in enumerate(chosen):
            result = checker.append(token, i + 1)
            text += result.delta_text
            if result.finish_reason is not None:
                break
        req.output_ids = chosen
        req.stop_checker = checker
        req.pending_text, req.pending_token_ids, req.pending_logprobs = text, list(chosen), rescored.logprobs


def _draft_loops(req: Request) -> bool:
    guard = LoopGuard(req.params.loop_guard, len(req.draft.model_ids))
    return any(guard.append(token) for token in req.draft.model_ids)
