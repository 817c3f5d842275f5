"""The drafting policy: which drafters an engine has, and which one a request gets.

Built once when the engine starts (`build_drafters`), asked once when a request is built
(`DraftPolicy.new_state`: its drafter, its drafts of the whole output, whether it is
rescored), and called at fixed points of each step; the engine names no drafter and does no
rescoring of its own.

| drafter         | built when                          | a request gets it when              |
|-----------------|-------------------------------------|-------------------------------------|
| client_drafter  | speculative_tokens > 0              | it gives `draft_text` (any request) |
| model_drafter   | speculative_tokens > 0              | else: the model drafted its whole   |
|                 |                                     | output (house-ocr, plain greedy)    |
| text_drafter    | speculative_algorithm ngram         | else, without a grammar             |
|                 | (n-grams), draft_model (a model on  |                                     |
|                 | an engine of its own:               |                                     |
|                 | `draft_engine`) or mtp              |                                     |
| grammar_drafter | with a text drafter (its fallback)  | else, with a grammar                |

A request rescored by the model (house-ocr's CTC rescoring, rescore.py) needs the model's
draft too, with or without speculative decoding: with `speculative_tokens=0` it has that
draft and no drafter.

In a step (`Engine.step`: schedule -> run -> decide -> apply):
- schedule: the scheduler asks each request's drafter for its draft (`Drafter.prepare` once a
  step for the decoding requests a drafter serves, then `Drafter.draft`). A draft model's
  engine runs its own steps there, inside `Scheduler.schedule`, so its cost is the schedule
  phase's and shows in the scheduler's flow (`Scheduler._prepare_drafts`);
- after decide, before apply: `after_step` (MTP drafts from the step's hidden states);
- apply (engine/process.py): `on_verdict` for each verdict, `holds_output` before a request's
  output is handed back, `on_finish` and `replace_output` when it finishes.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine.config import EngineConfig
from engine.errors import EngineStartupError
from engine.spec.drafters import DraftModelDrafter, Drafter, GrammarDrafter, ModelDrafter, NgramDrafter, TextDrafter
from engine.spec.mtp import MtpDrafter
from engine.spec.rescore import Rescorer
from engine.spec.state import DraftState

if TYPE_CHECKING:
    from engine.model_config import ModelConfig
    from engine.models.hooks import Rescored
    from engine.multimodal.inputs import MultimodalInputs
    from engine.request import Request
    from engine.sampling_params import SamplingParams
    from engine.scheduler import ScheduledBatch
    from engine.spec.verify import Verdict

# The most tokens of a grammar's forced text drafted in one step (a JSON key with its quotes and colon).
GRAMMAR_DRAFT_TOKENS = 12
# A client's draft is tokenised only as far as the request's output budget can reach: this many
# characters a token (a generous bound, for runs of spaces or digits one token spells; a draft's
# tokens past a cut are lost drafts, never a different output).
DRAFT_CHARS_PER_TOKEN = 16


def extra_kv_layers(config: EngineConfig, model_config: ModelConfig) -> int:
    """KV pool layers drafting needs beyond the model's: MTP layers keep K/V of their own, one
    more layer each. Said before anything is loaded where the model has none to draft with."""
    if config.speculative_algorithm != "mtp":
        return 0
    if model_config.num_mtp_layers < 1:
        raise EngineStartupError(f"speculative algorithm mtp needs a model with multi-token-prediction layers; "
                                 f"{config.model!r} has none (num_nextn_predict_layers is 0)")
    return model_config.num_mtp_layers


def build_drafters(config: EngineConfig, *, model, pool, model_config: ModelConfig, vocab_size: int,
                   context_length: int, eos_token_ids: set[int], tokenizer, detok_tokenizer, metrics,
                   new_engine: Callable) -> DraftPolicy:
    """The engine's drafters and rescorer, as `config` asks for them. `model`, `pool`: the
    engine's; `tokenizer` tokenises client drafts on the callers' threads, `detok_tokenizer`
    (the engine thread's) a grammar's forced text and a rescored line's text; `new_engine(config)`
    starts the draft model's engine (`Engine` itself: this package does not import the engine)."""
    n = config.speculative_tokens
    model_drafter = ModelDrafter(n) if n > 0 else None
    client_drafter = TextDrafter(n) if n > 0 else None    # as many tokens a step as the model's own
    draft_engine = None
    text_drafter: Drafter | None = None
    if config.speculative_algorithm == "ngram":
        text_drafter = NgramDrafter(config.draft_tokens, config.ngram_min, config.ngram_max)
    elif config.speculative_algorithm == "draft_model":
        draft_engine = _start_draft_engine(config, context_length, tokenizer, new_engine)
        text_drafter = DraftModelDrafter(config.draft_tokens, draft_engine, vocab_size)
    elif config.speculative_algorithm == "mtp":
        text_drafter = MtpDrafter(config.draft_tokens, model, pool)
    # constrained requests: the grammar's forced text first (up to a JSON key and its quotes)
    grammar_drafter = (GrammarDrafter(max(config.draft_tokens, GRAMMAR_DRAFT_TOKENS), _draft_encoder(detok_tokenizer),
                                      text_drafter) if text_drafter is not None else None)
    rescorer = (Rescorer(model, pool, eos_token_ids, detok_tokenizer, metrics)
                if config.ctc_rescoring and model.rescores_output else None)
    return DraftPolicy(model, tokenizer, model_config.eos_token_ids[:1], model_drafter, client_drafter, text_drafter,
                       grammar_drafter, draft_engine, rescorer, metrics)


def _start_draft_engine(config: EngineConfig, context_length: int, tokenizer, new_engine: Callable):
    """The draft model on an engine of its own, same device, dtype and context; its tokenizer
    must be the target's (drafted ids are the target's ids)."""
    draft = new_engine(EngineConfig(
        model=config.draft_model, context_length=context_length, kv_tokens=config.draft_kv_tokens,
        device=config.device, dtype=config.dtype, seed=config.seed, debug=config.debug,
        speculative_tokens=0, speculative_algorithm="none", ctc_rescoring=False,
        attention_backend=config.attention_backend))
    if draft.tokenizer.get_vocab() != tokenizer.get_vocab():
        draft.close()
        raise EngineStartupError(f"the draft model {config.draft_model!r} has another tokenizer than "
                                 f"{config.model!r}; a draft model must share the target's token ids")
    if draft.supports_images:
        draft.close()
        raise EngineStartupError(f"the draft model {config.draft_model!r} takes images; give a text model")
    return draft


def _draft_encoder(detok_tokenizer) -> Callable[[str], Sequence[int]]:
    """text -> token ids for drafts, on the engine thread: with the engine thread's own tokenizer
    (prompts are tokenised with the shared one on another thread), memoised, since a schema's
    forced texts repeat from request to request."""
    encode = detok_tokenizer.encode
    return functools.lru_cache(maxsize=4096)(lambda text: tuple(encode(text, add_special_tokens=False)))


class DraftPolicy:
    """The drafters of one engine and the hooks its loop calls. Fixed once built: `new_state`
    and `choose` read nothing that changes, so request-building threads may call them; the
    step hooks and the counts belong to the engine thread."""

    def __init__(self, model, tokenizer, eos_ids: Sequence[int], model_drafter: ModelDrafter | None,
                 client_drafter: TextDrafter | None, text_drafter: Drafter | None,
                 grammar_drafter: GrammarDrafter | None, draft_engine, rescorer: Rescorer | None, metrics=None):
        self.model = model                  # its hooks: engine/models/hooks.py
        self.tokenizer = tokenizer
        self.eos_ids = list(eos_ids)        # ends a client's draft, as the model's own ends in EOS
        self.model_drafter = model_drafter
        self.client_drafter = client_drafter
        self.text_drafter = text_drafter
        self.grammar_drafter = grammar_drafter
        self.draft_engine = draft_engine
        self.rescorer = rescorer
        self.metrics = metrics
        self.drafters = [d for d in (client_drafter, model_drafter, text_drafter, grammar_drafter) if d is not None]
        self.num_draft_tokens = 0            # drafted tokens verified ...
        self.num_accepted_draft_tokens = 0   # ... and how many of them the model agreed with

    num_rescored = property(lambda self: self.rescorer.num_rescored if self.rescorer is not None else 0)
    num_draft_chosen = property(lambda self: self.rescorer.num_draft_chosen if self.rescorer is not None else 0)

    # -- a request is built (on the caller's thread: reads no engine state) -------------
    def new_state(self, params: SamplingParams, multimodal: MultimodalInputs | None,
                  max_output_len: int) -> DraftState | None:
        """What speculative decoding keeps on a new request (`max_output_len`: the most tokens it
        may output); None: it neither drafts nor is rescored."""
        rescore = self.rescorer is not None and self.rescorer.wants(params)
        model_ids = None
        if multimodal is not None and (self.model_drafter is not None or rescore) and params.allows_draft:
            model_ids = self.model.draft_tokens(multimodal)
        drafter, text_ids = self.choose(params, model_ids, max_output_len)
        rescore = rescore and model_ids is not None
        if drafter is None and not rescore:
            return None
        return DraftState(drafter=drafter, model_ids=model_ids, text_ids=text_ids, rescore=rescore)

    def choose(self, params: SamplingParams, model_ids: list[int] | None,
               max_output_len: int) -> tuple[Drafter | None, list[int] | None]:
        """A request's drafter, and its client draft tokenised where that is what it drafts from."""
        if params.draft_text is not None and self.client_drafter is not None:
            # The client's expected output (a text layer's line) is the draft, not the model's own,
            # which still serves rescoring. Any request: verification is exact for all of them.
            return self.client_drafter, self.client_draft(params.draft_text, max_output_len)
        if model_ids is not None:
            return self.model_drafter, None      # None with speculative_tokens=0: rescoring only
        if self.text_drafter is not None:
            # Any request: verification replays a grammar's mask and penalties' counts position by
            # position, and keeps a sampled request's drafts by rejection sampling (verify.py).
            return (self.text_drafter if params.grammar is None else self.grammar_drafter), None
        return None, None

    def client_draft(self, text: str, max_output_len: int) -> list[int]:
        """`draft_text` tokenised + EOS, cut to the `max_output_len` tokens the request can ever
        output (no token past them is ever verified): the tokenizer reads at most
        DRAFT_CHARS_PER_TOKEN characters a token of it, so its work is bounded by the request's
        budget, not by the draft's length. AsyncEngine builds a request with a draft off the event
        loop."""
        ids = self.tokenizer.encode(text[:max_output_len * DRAFT_CHARS_PER_TOKEN], add_special_tokens=False)
        return (ids + self.eos_ids)[:max_output_len]

    # -- the step ------------------------------------------------------------------------
    def after_step(self, scheduled: ScheduledBatch, verdicts: list) -> None:
        """After the step's tokens are chosen, before they are applied (`Drafter.after_step`)."""
        starts = [r.num_computed for r in scheduled.requests]   # each request's position before the step
        for drafter in self.drafters:
            drafter.after_step(scheduled, starts, verdicts)

    def on_verdict(self, req: Request, verdict: Verdict) -> None:
        """Before a verdict's tokens are appended: count the draft it verified (under the method
        the scheduler noted when it handed the draft out) and keep rescoring's scores."""
        state = req.draft
        if state is None:
            return
        if req.spec_ids:
            drafted, accepted = len(req.spec_ids), len(verdict.tokens) - 1
            state.num_proposed += drafted
            state.num_accepted += accepted
            self.num_draft_tokens += drafted
            self.num_accepted_draft_tokens += accepted
            if self.metrics is not None:
                self.metrics.on_draft_verified(drafted, accepted)
                self.metrics.on_spec_verified(state.method, drafted, accepted)
        if state.rescore:
            self.rescorer.record(state, verdict)

    def holds_output(self, req: Request) -> bool:
        """Whether the request's output so far is held back (rescoring may still replace it)."""
        return self.rescorer is not None and self.rescorer.holds(req)

    def on_finish(self, req: Request, reason: str) -> Rescored | None:
        """When the request stops, its K/V still its own: the model's verdict on its draft, if any."""
        return self.rescorer.on_finish(req, reason) if self.rescorer is not None else None

    def replace_output(self, req: Request, rescored: Rescored) -> None:
        """Once the request has left the scheduler: its draft instead, where the model kept it."""
        self.rescorer.replace_output(req, rescored)

    def close(self) -> None:
        if self.draft_engine is not None:
            self.draft_engine.close()
