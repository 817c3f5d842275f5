"""What a job's text-layer mode does to a page, as one object chosen once per page.

| mode     | matches the layer | trusted layer text is          |
|----------|-------------------|--------------------------------|
| `never`  | no                | (never looked at)              |
| `auto`   | yes               | the answer: those lines and regions are not recognised |
| `verify` | yes               | the draft: every line and region is recognised, the layer's text sent along |

Stages ask the policy (`answer`, `draft`, `takes_text`) instead of testing the
mode; a PDF page only holds layer text for its blocks when `matches_layer`.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from vision.text_layer import TextLayerMode
from workers.recognizers.base import RecognitionOutcome


@dataclass(frozen=True)
class TextLayerPolicy:
    mode: TextLayerMode
    matches_layer: bool     # the page's own text layer is read and matched to its lines
    takes_text: bool        # trusted layer text is the answer (auto); otherwise only a draft (verify)

    @classmethod
    def for_mode(cls, mode: str) -> TextLayerPolicy:
        """`mode` was validated at the boundary (`workers.job_service.parse_text_layer`)."""
        return _POLICIES[TextLayerMode(mode)]

    def answer(self, layer_text: str | None) -> RecognitionOutcome | None:
        """A line's reading known without recognising it: the layer's text, when taken."""
        return RecognitionOutcome(layer_text) if self.takes_text and layer_text is not None else None

    def draft(self, layer_text: str | None) -> str | None:
        """What goes with a crop as its draft: the layer's text, as a reading would spell it."""
        return as_draft(layer_text) if not self.takes_text else None


_POLICIES = {
    TextLayerMode.NEVER: TextLayerPolicy(TextLayerMode.NEVER, matches_layer=False, takes_text=False),
    TextLayerMode.AUTO: TextLayerPolicy(TextLayerMode.AUTO, matches_layer=True, takes_text=True),
    TextLayerMode.VERIFY: TextLayerPolicy(TextLayerMode.VERIFY, matches_layer=True, takes_text=False),
}


def as_draft(text: str | None) -> str | None:
    """A layer's text as a reading would spell it: compatibility forms folded (NFKC: the ligatures
    ﬁ ﬂ ﬀ a typeset layer holds as one character, full-width forms) and its words joined by single
    spaces, so the draft agrees with what the model writes wherever the layer is right."""
    if text is None:
        return None
    return "\n".join(" ".join(line.split()) for line in unicodedata.normalize("NFKC", text).split("\n"))


def same_text(read: str, layer: str) -> bool:
    """Whether a reading says what the layer says: compatibility forms and whitespace aside."""
    return unicodedata.normalize("NFKC", read).split() == unicodedata.normalize("NFKC", layer).split()
