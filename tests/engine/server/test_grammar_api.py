"""Constrained output through the OpenAI API: `response_format` (json_schema, json_object)
and the `regex` / `ebnf` extensions, with the official `openai` client against the
session's real server. Bad grammars are a clear 400 (a check or the compile deadline) and the server
keeps serving; free requests batched with constrained ones keep their exact text."""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest

from .batching import hold_together
from .conftest import API_KEY, MAX_REQUEST_BYTES, MODEL

INVOICE = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string", "maxLength": 20},
        "total": {"type": "number", "minimum": 0},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "paid": {"type": "boolean"},
    },
    "required": ["invoice_number", "total", "currency", "paid"],
    "additionalProperties": False,
}
INVOICE_FORMAT = {"type": "json_schema", "json_schema": {"name": "invoice", "schema": INVOICE, "strict": True}}
TEXT = "Invoice INV-2044 from Acme GmbH. Total due: 1,250.00 EUR. Status: unpaid."
EXTRACT = [{"role": "user", "content": "Extract the invoice fields as JSON: " + TEXT}]
ANSWER = r"Total: [1-9][0-9]{0,4}(\.[0-9][0-9])? (EUR|USD|GBP)"
ANSWER_EBNF = ('root ::= "Total: " amount " " currency\n'
               'amount ::= [1-9] [0-9]{0,4} ("." [0-9] [0-9])?\n'
               'currency ::= "EUR" | "USD" | "GBP"\n')
# Under the 256 KiB body cap of the test server but over the engine's 64 KiB schema limit.
BIG_SCHEMA = {"type": "object", "properties": {f"field_{i:05d}": {"type": "string"} for i in range(4000)}}


def chat(client: openai.OpenAI, messages=EXTRACT, max_tokens: int = 80, **kwargs):
    return client.chat.completions.create(model=MODEL, messages=messages, max_tokens=max_tokens, temperature=0,
                                          **kwargs)


def assert_still_serving(client: openai.OpenAI) -> None:
    completion = chat(client, [{"role": "user", "content": "Hi"}], max_tokens=2)
    assert completion.choices[0].message.content


def test_chat_json_schema_output_validates(client):
    completion = chat(client, response_format=INVOICE_FORMAT)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    jsonschema.validate(json.loads(choice.message.content), INVOICE)


def test_completions_json_object_gives_an_object(client):
    completion = client.completions.create(model=MODEL, prompt="A JSON object describing a cat: ", max_tokens=60,
                                           temperature=0, extra_body={"response_format": {"type": "json_object"}})
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert isinstance(json.loads(choice.text), dict)


def test_text_response_format_is_free_text(client):
    free = chat(client, max_tokens=12).choices[0].message.content
    assert chat(client, max_tokens=12, response_format={"type": "text"}).choices[0].message.content == free


def test_regex_output_matches_fully(client):
    completion = chat(client, [{"role": "user", "content": "What is the total due? " + TEXT}], max_tokens=20,
                      extra_body={"regex": ANSWER})
    assert re.fullmatch(ANSWER, completion.choices[0].message.content)
    assert completion.choices[0].finish_reason == "stop"


def test_ebnf_output_matches_its_grammar(client):
    completion = client.completions.create(model=MODEL, prompt="What is the total due? " + TEXT + "\n",
                                           max_tokens=20, temperature=0, extra_body={"ebnf": ANSWER_EBNF})
    assert re.fullmatch(ANSWER, completion.choices[0].text)     # the regex says what the grammar says


def test_streamed_json_schema_deltas_validate(client):
    whole = chat(client, response_format=INVOICE_FORMAT).choices[0].message.content
    stream = chat(client, response_format=INVOICE_FORMAT, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    jsonschema.validate(json.loads(text), INVOICE)
    assert text == whole


def schema_format(schema: dict) -> dict:
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "bad", "schema": schema}}}


@pytest.mark.parametrize("extra, param, message", [
    (schema_format({"type": "objekt"}), "response_format", "json_schema"),
    (schema_format({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}), "response_format",
     "does not resolve"),
    (schema_format({"$ref": "https://example.com/invoice.json"}), "response_format", "points outside"),
    (schema_format(BIG_SCHEMA), "response_format", "more than the limit of 65536 bytes"),
    ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", "needs a 'json_schema'"),
    ({"ebnf": 'root ::= "yes" |'}, "ebnf", "EBNF"),
    ({"ebnf": 'answer ::= "yes"'}, "ebnf", '"root"'),
    ({"regex": "(abc"}, "regex", "parenthesis"),
    ({"regex": "(?=INV)[A-Z]+"}, "regex", "lookaround"),
    ({"regex": "[0-9]+", "ebnf": ANSWER_EBNF}, "ebnf", "one way only"),
    ({"regex": "[0-9]+", "response_format": {"type": "json_object"}}, "regex", "one way only"),
], ids=["unknown-type", "unresolved-ref", "remote-ref", "schema-over-limit", "no-schema", "ebnf-syntax",
        "ebnf-no-root", "regex-syntax", "regex-lookaround", "regex-and-ebnf", "json-object-and-regex"])
def test_bad_constraint_is_a_clear_400_and_the_server_keeps_serving(client, extra, param, message):
    with pytest.raises(openai.BadRequestError) as caught:
        chat(client, max_tokens=8, extra_body=extra)
    error = caught.value.body
    assert error["param"] == param and message in error["message"], error
    assert "Traceback" not in error["message"] and "/project/" not in error["message"]
    assert_still_serving(client)


def test_megabyte_schema_is_refused_by_the_body_cap(client):
    schema = {"type": "object", "description": "x" * (1 << 20)}
    assert len(json.dumps(schema)) > MAX_REQUEST_BYTES      # the cap (413) comes before any grammar check
    with pytest.raises(openai.APIStatusError) as caught:
        chat(client, max_tokens=8, extra_body=schema_format(schema))
    assert caught.value.status_code == 413
    assert caught.value.body["code"] == "request_too_large"
    assert_still_serving(client)


def test_catastrophic_backtracking_shape_is_served_quickly(client):
    # Catastrophic for a backtracking matcher; xgrammar builds an automaton, so it compiles at once.
    completion = chat(client, [{"role": "user", "content": "Scream."}], max_tokens=8, extra_body={"regex": r"(a+)+$"})
    assert re.fullmatch(r"a+", completion.choices[0].message.content)


def test_explosive_regex_times_out_as_a_400_and_the_server_keeps_serving(client):
    # 192 bytes whose automaton takes far longer than the compile timeout (10 s) to build: eight of
    # these pieces took 19 s and 70 MB here, so sixteen time out even on a machine several times faster,
    # and would be refused for their size (16 MiB cap) if they ever compiled in time.
    explosive = "".join(f"[^{letter}]{{0,3000}}" for letter in "abcdefghijklmnop")
    with pytest.raises(openai.BadRequestError) as caught:
        chat(client, max_tokens=8, extra_body={"regex": explosive})
    error = caught.value.body
    assert error["param"] == "regex", error
    # The compile deadline (or the size cap) ended it; the client's own timeout did not.
    assert "took longer than" in error["message"] or "more than the limit" in error["message"], error
    with pytest.raises(openai.BadRequestError) as again:      # remembered: the same refusal, no second compile
        chat(client, max_tokens=8, extra_body={"regex": explosive})
    assert again.value.body["message"] == error["message"]
    completion = chat(client, [{"role": "user", "content": "Pick a number."}], max_tokens=6,
                      extra_body={"regex": "[0-9]{1,3}"})      # the restarted compile process serves
    assert re.fullmatch("[0-9]{1,3}", completion.choices[0].message.content)


def test_free_requests_batched_with_constrained_ones_keep_their_text(engine_server, client):
    questions = ["Name a colour.", "What is 2 plus 2?", "Say hello in French."]
    constraints = [("Extract the invoice fields as JSON: " + TEXT, {"response_format": INVOICE_FORMAT}),
                   ("Invoice id? " + TEXT, {"regex": r"INV-[0-9]{4}"}),
                   ("What is the total due? " + TEXT, {"ebnf": ANSWER_EBNF})]

    def free(question: str) -> str:
        return chat(client, [{"role": "user", "content": question}], max_tokens=12).choices[0].message.content

    def constrained(question: str, extra: dict) -> str:
        return chat(client, [{"role": "user", "content": question}], extra_body=extra).choices[0].message.content

    # Alone first; this also compiles the grammars, so together they all start at once.
    free_alone = [free(question) for question in questions]
    constrained_alone = [constrained(*constraint) for constraint in constraints]
    with ThreadPoolExecutor(max_workers=6) as pool:
        constrained_futures = [pool.submit(constrained, *constraint) for constraint in constraints]
        free_futures = [pool.submit(free, question) for question in questions]
        free_together = [future.result() for future in free_futures]
        constrained_together = [future.result() for future in constrained_futures]
    assert free_together == free_alone
    assert constrained_together == constrained_alone
    jsonschema.validate(json.loads(constrained_together[0]), INVOICE)
    # Free and constrained requests share engine steps: held open together, with grammars that cannot
    # end (accept a stop token) before 600 characters, so more steps than the hold's max_tokens.
    unending = [{"regex": "[a-z ]{600}"}, {"ebnf": "root ::= [a-z ]{600}"}, {"regex": "[0-9 ]{600}"}]
    bodies = [{"model": MODEL, "messages": [{"role": "user", "content": question}], "temperature": 0}
              for question in questions]
    bodies += [{"model": MODEL, "messages": [{"role": "user", "content": TEXT}], "temperature": 0, **extra}
               for extra in unending]
    held = hold_together(engine_server, bodies, API_KEY)
    assert held["ocrserve_requests_running"] >= len(bodies)
