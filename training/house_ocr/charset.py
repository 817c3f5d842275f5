"""The house model's vocabulary: one token per character, plus a few specials.

Latin script first: printable ASCII, the Latin-1 letters of western European
languages, and the typographic symbols documents use (dashes, curly quotes,
currency, bullets). Anything else is read as `<unk>`.
"""
from __future__ import annotations

PAD, BOS, EOS, UNK, IMAGE, IMAGE_START, IMAGE_END, TASK_TEXT = (
    "<pad>", "<s>", "</s>", "<unk>", "<|image|>", "<|begin_of_image|>", "<|end_of_image|>", "<|text|>")
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK, IMAGE, IMAGE_START, IMAGE_END, TASK_TEXT]

_ASCII = "".join(chr(c) for c in range(32, 127))
_LATIN1_LETTERS = "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝßàáâãäåæçèéêëìíîïñòóôõöøùúûüýÿ"
_SYMBOLS = "€£¥¢©®™°±×÷§¶•·–—‘’“”„…½¼¾µ¹²³«»¬¿¡†‡‰′″→←≤≥≠≈∞√"
CHARACTERS = _ASCII + _LATIN1_LETTERS + _SYMBOLS
assert len(set(CHARACTERS)) == len(CHARACTERS)

VOCAB: list[str] = SPECIAL_TOKENS + list(CHARACTERS)
TOKEN_ID: dict[str, int] = {token: index for index, token in enumerate(VOCAB)}
PAD_ID, BOS_ID, EOS_ID, UNK_ID = TOKEN_ID[PAD], TOKEN_ID[BOS], TOKEN_ID[EOS], TOKEN_ID[UNK]
IMAGE_ID, IMAGE_START_ID, IMAGE_END_ID, TASK_TEXT_ID = (
    TOKEN_ID[IMAGE], TOKEN_ID[IMAGE_START], TOKEN_ID[IMAGE_END], TOKEN_ID[TASK_TEXT])

# Typographic variants a corpus may contain that the vocabulary spells another way.
_FOLD = {"\u00a0": " ", "\u2009": " ", "\u202f": " ", "\t": " ", "\u2011": "-", "\u2212": "-", "\ufb01": "fi",
         "\ufb02": "fl", "\u2010": "-"}


def normalise(text: str) -> str:
    """Fold spacing/ligature variants and drop characters outside the vocabulary."""
    text = "".join(_FOLD.get(ch, ch) for ch in text)
    return "".join(ch for ch in text if ch in TOKEN_ID)


def encode(text: str) -> list[int]:
    return [TOKEN_ID.get(ch, UNK_ID) for ch in text]


def decode(ids: list[int]) -> str:
    return "".join(VOCAB[i] for i in ids if i >= len(SPECIAL_TOKENS))
