"""The loop guard with the house OCR model (models/house-ocr) on rendered line crops.

Real repetition is not a loop: lines that repeat for real (rows of a table of zeros,
zero-filled listings, a hex dump) read the same, token for token, with the guard the
workers send (`workers.recognizers.repetition.loop_guard_option`: half the 512-token line
budget) as without it, CTC rescoring and the model's own drafts on as served (a line whose
decoder reading runs 256 dots before its EOS is rescored to the CTC draft both ways). A loop
is: on a leader of 40 dots (and, with the current weights, on a contents line's leader of 28)
the decoder writes dots to its 512-token limit unguarded; guarded,
it is stopped after 256 tokens of dots and the line is the model's CTC reading (the draft
rescoring weighs), a whole line with its end; with rescoring off it is the loop's start,
finish reason "repetition", cut at the token the rule names. A guard set tight
enough to call 40 zeros a loop stops their reading at exactly the token its rule names,
inside the model's accepted draft (the house model drafts its CTC reading).
"""
from __future__ import annotations

import pytest

from engine.config import EngineConfig
from engine.engine import Engine
from engine.loop_guard import LoopGuardSpec
from engine.sampling_params import SamplingParams
from tests.engine.test_house_ocr import LINES, png, prompt, render
from tests.engine.test_loop_guard import first_loop
from workers.recognizers.openai_compatible import MAX_TOKENS
from workers.recognizers.repetition import loop_guard_option
from vision.layout import RecognitionTask

pytestmark = pytest.mark.slow

REAL_REPETITION = [
    ("0.00 " * 11 + "0.00", "DejaVuSans.ttf", 18),                          # a table row of zeros
    ("0 " * 19 + "0", "DejaVuSansMono.ttf", 18),                            # another, one digit a cell
    ("0" * 40, "DejaVuSansMono.ttf", 20),                                   # a zero-filled listing
    ("0000 " * 11 + "0000", "DejaVuSansMono.ttf", 16),                      # grouped zeros
    ("00000000  " + "00 " * 8 + " " + "00 " * 8 + " |................|", "DejaVuSansMono.ttf", 16),  # hex dump
]
ZEROS = 2   # REAL_REPETITION's 40 zeros
# A contents line's leader: the weights of 2026-12-06 (fourth and fifth phases) write dots past
# its end to the token limit unguarded; guarded, the line is their CTC reading, whole, page number and all.
LEADER = ("Introduction " + ". " * 28 + "1", "DejaVuSerif.ttf", 20)
LOOPING = ("Distribution " + ". " * 40 + "xi", "DejaVuSerif.ttf", 24)   # the model writes dots to its limit


def guarded(spec: LoopGuardSpec | dict | bool | None, **kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS[RecognitionTask.TEXT], logprobs=0,
                          loop_guard=spec, **kw)


@pytest.fixture(scope="module")
def crops():
    return [png(render(*line)) for line in LINES + REAL_REPETITION + [LEADER, LOOPING]]


def test_lines_read_the_same_with_the_workers_guard(crops):
    # as served (drafts, rescoring); no prefix cache, so the two runs differ in the guard alone
    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, enable_prefix_cache=False, debug=True))
    prompts = [prompt(engine)] * len(crops)
    off = engine.generate(prompts, guarded(None), images=[[c] for c in crops])
    on = engine.generate(prompts, guarded(loop_guard_option(MAX_TOKENS[RecognitionTask.TEXT])),
                         images=[[c] for c in crops])
    for a, b in zip(on[:-2], off[:-2]):
        assert a.finish_reason == b.finish_reason == "stop"
        assert a.token_ids == b.token_ids and a.text == b.text
    assert max(len(out.token_ids) for out in off[len(LINES):-2]) >= 60, "the repetitive lines are read at length"
    assert off[len(LINES) + ZEROS].text == "0" * 40
    for index, start, end in ((-2, "Introduction", "1"), (-1, "Distribution", "")):
        loop, stopped = off[index], on[index]
        # unguarded, the model writes dots (the fifth phase's weights, spaces after them) to its limit
        assert loop.finish_reason == "length" and loop.text.startswith(start) and loop.text.count(".") > 100
        draft = engine.make_request(prompts[index], guarded(None), images=[crops[index]]).draft.model_ids
        assert stopped.finish_reason == "stop" and stopped.token_ids == draft
        assert stopped.text.startswith(start) and stopped.text.endswith(end) and len(stopped.text) < 120


def test_without_rescoring_a_loop_is_cut_where_the_rule_says(crops):
    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, ctc_rescoring=False,
                                 enable_prefix_cache=False, debug=True))
    spec = LoopGuardSpec(**loop_guard_option(MAX_TOKENS[RecognitionTask.TEXT]))
    loop = run_all_images(engine, crops[-1], guarded(None))
    stopped = run_all_images(engine, crops[-1], guarded(spec))
    stop = first_loop(loop["tokens"], spec)
    assert loop["finish"] == "length" and stopped["finish"] == "repetition"
    assert stopped["tokens"] == loop["tokens"][:stop] and len("Distribution") + 256 <= stop < 300


def test_a_tight_guard_stops_the_zeros_at_the_token_its_rule_names(crops):
    engine = Engine(EngineConfig(model="house-ocr", kv_tokens=8192, ctc_rescoring=False,
                                 enable_prefix_cache=False, debug=True))
    spec = LoopGuardSpec(max_repeats=3, min_run_tokens=16, max_ngram_size=4)
    zeros = crops[len(LINES) + ZEROS]
    accepted = engine.num_accepted_draft_tokens
    free = run_all_images(engine, zeros, guarded(None))
    assert engine.num_accepted_draft_tokens - accepted > 10, "the model's draft of the zeros was kept"
    stop = first_loop(free["tokens"], spec)
    assert stop is not None and stop < len(free["tokens"])
    cut = run_all_images(engine, zeros, guarded(spec))
    assert cut["finish"] == "repetition"
    assert cut["tokens"] == free["tokens"][:stop] and cut["logprobs"] == free["logprobs"][:stop]
    assert cut["deltas"][-1] > 1, "the stop fell inside a step that kept drafted tokens"


def run_all_images(engine: Engine, crop: bytes, params: SamplingParams) -> dict:
    req = engine.add_request(prompt(engine), params, images=[crop])
    got = {"tokens": [], "logprobs": [], "finish": None, "deltas": []}
    while got["finish"] is None:
        for out in engine.step():
            if out.request_id == req.request_id:
                got["tokens"] += out.delta_token_ids
                got["logprobs"] += out.delta_logprobs
                got["deltas"].append(len(out.delta_token_ids))
                got["finish"] = out.finish_reason if out.finished else None
    return got
