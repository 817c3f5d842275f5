"""Incremental detokenization: text deltas per generated token in O(1).

Decoding the whole output every step costs O(n) per token; decoding one token
alone breaks characters that span tokens (byte-level BPE splits an emoji into
several tokens) and, for SentencePiece tokenizers, drops the space a token
carries at the start of a decode. So each step decodes a short window:

    ids:  ... | prefix_offset ......... read_offset ......... end |
                 `prefix_text` (already emitted)   new tokens

and emits what the window adds beyond `prefix_text`, unless that ends in an
incomplete UTF-8 character ('\\ufffd'); then the tokens wait for the next step.
After an emission the window slides: prefix_offset <- read_offset <- end.
Window edges therefore sit on character boundaries, and for a byte-level BPE
(GPT-2, Llama 3, SmolLM2) the deltas concatenate to exactly
`tokenizer.decode(output_ids, skip_special_tokens=...)`. `flush()` releases a
trailing incomplete character (as '\\ufffd', like the full decode) at the end.
"""
from __future__ import annotations

from collections.abc import Sequence

# Prompt tokens decoded as context for the first output tokens: enough for
# SentencePiece's leading-space rule, few enough to stay O(1).
_NUM_CONTEXT_IDS = 5
_INCOMPLETE = "\ufffd"


class IncrementalDetokenizer:
    def __init__(self, tokenizer, prompt_ids: Sequence[int] | None = None, skip_special_tokens: bool = True):
        self.tokenizer = tokenizer
        self.skip_special_tokens = skip_special_tokens
        context = list(prompt_ids[-_NUM_CONTEXT_IDS:]) if prompt_ids else []
        if context and self._decode(context).endswith(_INCOMPLETE):
            # The prompt ends mid-character: output bytes would complete a
            # character that is not theirs. Decode the output on its own.
            context = []
        self._ids: list[int] = context      # context ids, then output ids
        self._prefix_offset = 0
        self._read_offset = len(context)
        self._prefix_text: str | None = None  # decode of ids[prefix_offset:read_offset], cached
        self._pieces: list[str] = []
        self._num_chars = 0

    @property
    def text(self) -> str:
        """Everything emitted so far (the output's full decode, but for a held-back partial character)."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def num_chars(self) -> int:
        return self._num_chars

    def append(self, token_id: int) -> str:
        """Add one output token; return the newly completed text ('' if none yet)."""
        self._ids.append(token_id)
        return self._emit(allow_incomplete=False)

    def flush(self) -> str:
        """Emit whatever is held back (an incomplete trailing character decodes as '\\ufffd')."""
        if self._read_offset == len(self._ids):
            return ""
        return self._emit(allow_incomplete=True)

    def _emit(self, allow_incomplete: bool) -> str:
        if self._prefix_text is None:
            self._prefix_text = self._decode(self._ids[self._prefix_offset:self._read_offset])
        new_text = self._decode(self._ids[self._prefix_offset:])
        if len(new_text) <= len(self._prefix_text) or (new_text.endswith(_INCOMPLETE) and not allow_incomplete):
            return ""
        delta = new_text[len(self._prefix_text):]
        self._prefix_offset, self._read_offset = self._read_offset, len(self._ids)
        self._prefix_text = None
        self._pieces.append(delta)
        self._num_chars += len(delta)
        return delta

    def _decode(self, ids: list[int]) -> str:
        if not ids:
            return ""
        return self.tokenizer.decode(ids, skip_special_tokens=self.skip_special_tokens)
