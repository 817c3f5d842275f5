"""Where a request's draft continues once its output has left the draft, and the method it is counted under."""
from __future__ import annotations

from engine.request import Request
from engine.sampling_params import SamplingParams
from engine.spec import DraftState, GrammarDrafter, ModelDrafter, NgramDrafter, TextDrafter


def _request(draft: list[int], output: list[int], text: list[int] | None = None) -> Request:
    req = Request("r", 0, [1, 2, 3], SamplingParams(temperature=0.0), None, None, 64,
                  draft=DraftState(model_ids=list(draft), text_ids=text))
    req.output_ids = list(output)
    return req


def propose(req: Request, k: int) -> list[int]:
    return ModelDrafter(8).propose(req, k)


def test_an_agreeing_output_continues_the_draft():
    assert propose(_request([5, 6, 7, 8, 9], [5, 6]), 2) == [7, 8]
    assert propose(_request([5, 6, 7], [5, 6, 7]), 4) == []
    assert propose(_request([5, 6, 7], []), 0) == []
    assert propose(_request([], [5]), 4) == []


DRAFT = [1, 2, 3, 9, 9, 4, 5, 6, 9, 9, 7, 8]     # the tail (9, 9) occurs twice


def test_an_added_token_realigns_at_the_nearest_occurrence_of_the_tail():
    # the output added a 9: only the 2-token tail (9, 9) is in the draft, ending at 5 and at 10;
    # the output has 6 tokens, so the draft resumes after the first, not the last
    assert propose(_request(DRAFT, [1, 2, 3, 9, 9, 9]), 2) == [4, 5]


def test_a_skipped_token_realigns_on_the_longest_tail_found():
    assert propose(_request(DRAFT, [1, 2, 3, 9, 4, 5]), 3) == [6, 9, 9]


def test_an_output_unlike_the_draft_gets_no_proposal():
    assert propose(_request(DRAFT, [11, 12, 13]), 4) == []


def test_drafts_name_the_method_that_made_them():
    req = _request([5, 6, 7, 8], [5, 6])
    assert ModelDrafter(4).draft(req, 2) == ([7, 8], "ctc")
    # no grammar: a grammar drafter's draft is its fallback's, and counted as such
    req.output_ids = [1, 2]
    assert GrammarDrafter(8, lambda text: [], NgramDrafter(3)).draft(req, 8) == ([3, 1, 2], "ngram")
    assert GrammarDrafter(8, lambda text: []).draft(req, 8) == ([], "grammar")


def test_a_client_draft_leads_while_the_output_agrees_with_it_then_the_model_s_own():
    """The text layer's draft first; past a place where the output left it (a misread the CTC
    reading shares), the model's own draft where it still agrees exactly, counted as ctc; where
    neither agrees exactly, the realigned client draft; a request without an own draft has the
    client's alone."""
    drafter = TextDrafter(8)
    text, own = [5, 6, 7, 8, 9], [5, 6, 70, 8, 9]
    assert drafter.draft(_request(own, [5], text), 3) == ([6, 7, 8], "text_layer")
    assert drafter.draft(_request(own, [5, 6, 70], text), 3) == ([8, 9], "ctc")
    assert drafter.draft(_request([1, 2], [5, 6, 7, 77, 7, 8], text), 3) == ([9], "text_layer")   # realigned
    assert drafter.draft(_request([], [5, 6], text), 2) == ([7, 8], "text_layer")
    assert drafter.draft(_request([], [40, 41], text), 2) == ([], "text_layer")
