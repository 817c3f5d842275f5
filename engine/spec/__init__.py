"""Speculative decoding: drafters propose tokens, the step's forward pass verifies them.

| module     | owns                                                                       |
|------------|----------------------------------------------------------------------------|
| policy     | which drafters an engine has (`build_drafters`) and which one a request    |
|            | gets (`DraftPolicy.choose`); the hooks the engine loop calls               |
| state      | `DraftState`: what drafting and rescoring keep on a request                |
| drafters   | the `Drafter` interface and the drafters below but MTP                     |
| mtp        | `MtpDrafter`: drafts from the model's multi-token-prediction layers        |
| verify     | `decide`/`verify`: the tokens each request of a step keeps                 |
| rescore    | `Rescorer`: house-ocr's rescoring of a finished line against its draft     |
| flags      | vLLM's and SGLang's command-line spellings onto `EngineConfig`             |

A drafter proposes up to `num_tokens` tokens to follow a request's output so far
(`propose(req, k)`); the scheduler asks for them when it schedules the request
(`Scheduler._draft`), the model runner runs them with the request's pending token
in one forward pass, and `verify.py` keeps the longest run the model's
own choices agree with, plus the model's token at the first disagreement, so the
output is exactly what decoding one token a step gives. The K/V written for
rejected tokens goes back to the pool at once.

Drafters:
- `ModelDrafter`: the model's own draft of the whole output, made when the
  request is built (house-ocr: its CTC reading of the line), realigned to the
  output so far (`propose_aligned`).
- `TextDrafter`: the client's draft of the whole output (`draft_text`: a PDF
  text layer's line under `text_layer="verify"`), realigned the same way; for
  any model and request. The model verifies the layer instead of the pipeline
  trusting it.
- `NgramDrafter` (prompt lookup): the tokens that followed the latest earlier
  occurrence of the output's last n tokens, in the prompt and the output so far.
  For any model; made for extraction and transcription, where the output copies
  spans of the prompt.
- `DraftModelDrafter`: a smaller model with the same tokenizer, on an engine of
  its own in this process whose radix cache keeps the sequence drafted so far.
- `MtpDrafter` (`mtp.py`): the model's multi-token-prediction layers (GLM-OCR's
  NextN layer), run after the step's forward pass on its hidden states and chained
  for further tokens; their K/V is one more layer of the same pool.
- `GrammarDrafter` (jump-forward): where a request's grammar allows one
  continuation only (JSON keys and punctuation fixed by the schema), that text,
  tokenised; the text drafter (n-grams, MTP, a draft model) elsewhere, so
  constrained requests get both.

Which requests take drafts: the model's own, greedy requests without penalties
or grammar (`SamplingParams.allows_draft`: rescoring compares raw scores);
n-grams, MTP and a draft model, every request (a sampled one is verified by
rejection sampling, `verify.py`); none, a request that says `speculative=False`
(the scheduler skips it). A request whose choice at a position depends on
the tokens before it (a grammar's mask, penalties' counts) is verified position
by position through the grammar and the sampler, advanced past the drafted
tokens kept so far (`verify.py`), so its tokens and logprobs
are those of one token a step.

Each draft is counted in the metrics under the method that made it
(`Drafter.draft`: a grammar drafter's fallback drafts as n-grams). `flags.py`
maps vLLM's and SGLang's command-line spellings onto `EngineConfig`.

To add a drafter: a `Drafter` subclass (drafters.py, or a module of its own like mtp.py)
with a `name` added to engine/metrics.py's SPEC_METHODS, then where `build_drafters` builds
it and where `DraftPolicy.choose` hands it to a request (policy.py); nothing outside this
package names a drafter.
"""
from __future__ import annotations

from engine.spec.drafters import (DraftModelDrafter, Drafter, GrammarDrafter, ModelDrafter, NgramDrafter, TextDrafter,
                                  propose_aligned, propose_ngram)
from engine.spec.mtp import MtpDrafter
from engine.spec.policy import DraftPolicy, build_drafters, extra_kv_layers
from engine.spec.rescore import Rescorer
from engine.spec.state import DraftState

__all__ = ["DraftModelDrafter", "DraftPolicy", "DraftState", "Drafter", "GrammarDrafter", "ModelDrafter", "MtpDrafter",
           "NgramDrafter", "Rescorer", "TextDrafter", "build_drafters", "extra_kv_layers", "propose_aligned",
           "propose_ngram"]
