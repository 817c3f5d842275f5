"""What speculative decoding keeps on a request (`Request.draft`), in one place.

A request the engine neither drafts for nor rescores carries none (`Request.draft is None`).
The drafted tokens a step verifies stay on the request itself (`Request.spec_ids`): the model
runner and `verify.py` read them like the request's other tokens of the step.

| field            | meaning                                                           |
|------------------|-------------------------------------------------------------------|
| drafter          | the `Drafter` that proposes its drafts (policy.py chose it when   |
|                  | the request was built); None: none (rescoring only)               |
| model_ids        | the model's own draft of the whole output (house-ocr: its CTC     |
|                  | reading + EOS; `ModelHooks.draft_tokens`), or None                |
| text_ids         | the client's draft of the whole output (`draft_text`, e.g. a PDF  |
|                  | text layer's line) + EOS, at most the request's output budget     |
|                  | (policy.py cuts it), or None                                      |
| model_cursor     | where the output so far leaves off in model_ids / text_ids        |
| text_cursor      | (align.py), kept from step to step; built from them               |
| method           | the drafting method of the `spec_ids` the current step verifies   |
|                  | (engine/metrics.py's SPEC_METHODS), set with them                 |
| held             | a draft made at the end of a step for the next (MTP):             |
|                  | (the output length it follows, its tokens)                        |
| num_proposed     | drafted tokens verified for this request so far ...               |
| num_accepted     | ... and how many of them the model kept                           |
| rescore          | the model may replace the finished greedy output with model_ids   |
|                  | (house-ocr's CTC rescoring, rescore.py): nothing is handed back   |
|                  | until the request finishes                                        |
| output_log_probs | rescore: log P of each output token as decoded                    |

Like everything else on a request, it survives retraction unchanged (a held MTP draft is
dropped where the output it follows has moved on).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.spec.align import DraftCursor

if TYPE_CHECKING:
    from engine.spec.drafters import Drafter


@dataclass(eq=False)
class DraftState:
    drafter: Drafter | None = None
    model_ids: list[int] | None = None
    text_ids: list[int] | None = None
    method: str = ""
    held: tuple[int, list[int]] | None = None
    num_proposed: int = 0
    num_accepted: int = 0
    rescore: bool = False
    output_log_probs: list[float] = field(default_factory=list)
    model_cursor: DraftCursor | None = field(default=None, init=False)
    text_cursor: DraftCursor | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.model_cursor = DraftCursor(self.model_ids) if self.model_ids else None
        self.text_cursor = DraftCursor(self.text_ids) if self.text_ids else None
