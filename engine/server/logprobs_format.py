"""Engine `TokenLogprobs` in the two OpenAI wire shapes (chat and legacy completions)."""
from __future__ import annotations

from typing import Any


class TokenTexts:
    """Token id -> its text, for logprob listings (special tokens shown, not skipped)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._cache: dict[int, str] = {}

    def __call__(self, token_id: int) -> str:
        text = self._cache.get(token_id)
        if text is None:
            text = self._tokenizer.decode([token_id], skip_special_tokens=False)
            self._cache[token_id] = text
        return text


def chat_logprobs(token_texts: TokenTexts, logprobs: list[Any]) -> dict:
    """`choices[i].logprobs` of a chat completion: {"content": [...]}."""
    def entry(token_id: int, logprob: float) -> dict:
        text = token_texts(token_id)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8"))}

    content = []
    for item in logprobs:
        chosen = entry(item.token_id, item.logprob)
        chosen["top_logprobs"] = [entry(token_id, logprob) for token_id, logprob in item.top]
        content.append(chosen)
    return {"content": content, "refusal": None}


def completion_logprobs(token_texts: TokenTexts, logprobs: list[Any], text_offset: int) -> dict:
    """`choices[i].logprobs` of a text completion: parallel lists; `text_offset` is where these tokens start."""
    tokens, token_logprobs, top_logprobs, offsets = [], [], [], []
    for item in logprobs:
        text = token_texts(item.token_id)
        tokens.append(text)
        token_logprobs.append(item.logprob)
        top_logprobs.append({token_texts(token_id): logprob for token_id, logprob in item.top} or None)
        offsets.append(text_offset)
        text_offset += len(text)
    return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top_logprobs,
            "text_offset": offsets}
