"""Where a request's draft continues once its output has left the draft, and the method it is counted under."""
from __future__ import annotations

from engine.request import Request
from engine.sampling_params import SamplingParams
from engine.spec import GrammarDrafter, ModelDrafter, NgramDrafter


def _request(draft: list[int], output: list[int]) -> Request:
    req = Request("r", 0, [1, 2, 3], SamplingParams(temperature=0.0), None, None, 64, draft_ids=list(draft))
    req.output_ids = list(output)
    return req


def test_an_agreeing_output_continues_the_draft():
    assert _request([5, 6, 7, 8, 9], [5, 6]).propose(2) == [7, 8]
    assert _request([5, 6, 7], [5, 6, 7]).propose(4) == []
    assert _request([5, 6, 7], []).propose(0) == []
    assert _request([], [5]).propose(4) == []


DRAFT = [1, 2, 3, 9, 9, 4, 5, 6, 9, 9, 7, 8]     # the tail (9, 9) occurs twice


def test_an_added_token_realigns_at_the_nearest_occurrence_of_the_tail():
    # the output added a 9: only the 2-token tail (9, 9) is in the draft, ending at 5 and at 10;
    # the output has 6 tokens, so the draft resumes after the first, not the last
    assert _request(DRAFT, [1, 2, 3, 9, 9, 9]).propose(2) == [4, 5]


def test_a_skipped_token_realigns_on_the_longest_tail_found():
    assert _request(DRAFT, [1, 2, 3, 9, 4, 5]).propose(3) == [6, 9, 9]


def test_an_output_unlike_the_draft_gets_no_proposal():
    assert _request(DRAFT, [11, 12, 13]).propose(4) == []


def test_drafts_name_the_method_that_made_them():
    req = _request([5, 6, 7, 8], [5, 6])
    assert ModelDrafter(4).draft(req, 2) == ([7, 8], "ctc")
    # no grammar: a grammar drafter's draft is its fallback's, and counted as such
    req.output_ids = [1, 2]
    assert GrammarDrafter(8, lambda text: [], NgramDrafter(3)).draft(req, 8) == ([3, 1, 2], "ngram")
    assert GrammarDrafter(8, lambda text: []).draft(req, 8) == ([], "grammar")
