"""Rendered-and-tokenised chat prompts, kept by the messages' structure.

An OCR client sends the same message around a different image for every line
of a page (a user turn holding one `image_url` and the task prompt). Once
the image parts are placeholders, those messages are equal, and so are the
chat template's text and its token ids: they are rendered and tokenised once
and then taken from here.

| invariant | why it holds |
|---|---|
| a hit gives the ids a miss would compute | the key is the whole template input, image placeholders in order ... |
| ... unless it reads the clock | a template that calls `strftime_now` is never cached |
| bounded | at most `max_entries` entries, keys of at most `max_key_chars`; least recently used go first |

Used only on the server's event loop (no lock).
"""
from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any


class PromptCache:
    def __init__(self, max_entries: int = 256, max_key_chars: int = 8192) -> None:
        self.max_entries = max_entries
        self.max_key_chars = max_key_chars
        self.num_hits = 0
        self.num_misses = 0
        self._entries: OrderedDict[str, tuple[str, tuple[int, ...]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def key(self, template: Any, template_messages: list[dict[str, Any]]) -> str | None:
        """The cache key of these template inputs (`template`: the tokenizer's chat template),
        or None when they must not be cached."""
        if not template or "strftime_now" in str(template):
            return None
        key = json.dumps(template_messages, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return key if len(key) <= self.max_key_chars else None

    def get(self, key: str) -> tuple[str, list[int]] | None:
        entry = self._entries.get(key)
        if entry is None:
            self.num_misses += 1
            return None
        self._entries.move_to_end(key)
        self.num_hits += 1
        return entry[0], list(entry[1])

    def put(self, key: str, text: str, ids: list[int]) -> None:
        self._entries[key] = (text, tuple(ids))
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
