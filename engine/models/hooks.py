"""What the engine asks of a model beyond its forward pass, with do-nothing defaults that every
model class inherits, so the engine loop calls these and never probes a model for attributes.

| hook                  | asked when                     | a model implements it to                       |
|-----------------------|--------------------------------|------------------------------------------------|
| `draft_tokens`        | a request is built             | draft the whole output from the request's own  |
|                       |                                | inputs (house-ocr: the CTC reading of a line)  |
| `rescores_output`     | a request is built             | say that it compares a finished greedy output  |
|                       |                                | with that draft (below)                        |
| `rescored_output`     | a rescored request stops, its  | keep the draft instead of what was decoded     |
|                       | K/V still its own              | where it scores higher (house-ocr); what it    |
|                       | (engine/spec/rescore.py)       | reads of the request: `FinishedOutput`         |
| `mtp_layers`          | the engine starts with `mtp`   | hold multi-token-prediction layers and run     |
|                       |                                | them (`mtp_forward`, GLM-OCR; spec/mtp.py)     |
| `capture_hidden`      | set by the MTP drafter         | keep the final-norm hidden states of a forward |
|                       |                                | pass in `captured_hidden`                      |

The hooks see plain values, never the engine's request: a model module imports no part of
the engine loop.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from engine.multimodal.inputs import MultimodalInputs
    from engine.sampler import TokenLogprobs


@dataclass(frozen=True, eq=False)
class FinishedOutput:
    """What `rescored_output` reads of a request that stopped (built by engine/spec/rescore.py)."""

    prompt_ids: list[int]
    output_ids: list[int]
    output_log_probs: list[float]      # log P of each output token as decoded (raw greedy rows)
    draft_ids: list[int]               # the model's draft of the whole output (`draft_tokens`)
    kv_slots: torch.Tensor             # its pool slots, prompt then output: still its own
    multimodal: MultimodalInputs       # its images
    max_output_len: int
    num_top_logprobs: int | None       # the request's `logprobs` (None: not asked for)
    logprobs: list[TokenLogprobs]      # its output tokens' logprobs as decoded (all still pending)
    # the loop guard stopped the output (engine/loop_guard.py): it is a loop's start, not a reading to
    # weigh against the draft; the draft is kept where it is a whole reading
    looped: bool = False


@dataclass
class Rescored:
    """A model's verdict on a finished output that differed from its draft."""

    kept_draft: bool
    tokens: list[int] = field(default_factory=list)              # the draft, where kept
    logprobs: list[TokenLogprobs] = field(default_factory=list)  # its tokens', where the request asks


class ModelHooks:
    is_multimodal = False
    rescores_output = False
    mtp_layers: Sequence = ()      # a model with MTP layers sets its own
    capture_hidden = False

    def draft_tokens(self, multimodal) -> list[int] | None:
        """A draft of the request's whole output made from its inputs, verified speculatively; None: none."""
        return None

    def rescored_output(self, out: FinishedOutput, pool, eos_token_ids) -> Rescored | None:
        """For a request built with `rescores_output`, when it stops: None where there is nothing
        to choose (the output is the draft, or the draft cannot be compared), else the verdict."""
        return None
