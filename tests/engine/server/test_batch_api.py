"""POST /v1/batch: an OpenAI Batch API input file run at once. Each line answers what the same
body sent alone to /v1/chat/completions answers (greedy text, usage, logprobs), in input order
under its custom_id; a line the engine refuses carries its own 400 and the others still run;
a malformed file is refused whole, naming the line."""
from __future__ import annotations

import json

from tests.engine.server.conftest import API_KEY, MODEL

QUESTIONS = ["Name three colours of the rainbow.", "What is two plus two?", "Say hello in French."]


def chat_body(question: str, **extra) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}], "max_tokens": 8,
            "temperature": 0, **extra}


def batch_file(bodies: list[dict], ids: list[str] | None = None) -> bytes:
    ids = ids or [f"q{i}" for i in range(len(bodies))]
    return "\n".join(json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                                 "body": body}) for custom_id, body in zip(ids, bodies)).encode()


def post_batch(http, content: bytes):
    return http.post("/v1/batch", content=content, headers={"Content-Type": "application/jsonl"})


def output_lines(response) -> list[dict]:
    assert response.status_code == 200, response.text
    return [json.loads(line) for line in response.content.splitlines() if line.strip()]


def test_each_line_answers_what_the_request_alone_answers(http):
    bodies = [chat_body(q, logprobs=True, top_logprobs=2) for q in QUESTIONS]
    alone = [http.post("/v1/chat/completions", json=body).json() for body in bodies]
    lines = output_lines(post_batch(http, batch_file(bodies, ["a", "b", "c"])))
    assert [line["custom_id"] for line in lines] == ["a", "b", "c"]
    for line, single in zip(lines, alone):
        assert line["error"] is None and line["id"].startswith("batch_req_")
        response = line["response"]
        assert response["status_code"] == 200 and response["request_id"] == response["body"]["id"]
        body = response["body"]
        assert body["object"] == "chat.completion" and body["model"] == MODEL
        assert body["choices"][0]["message"] == single["choices"][0]["message"]
        assert body["choices"][0]["finish_reason"] == single["choices"][0]["finish_reason"]
        tokens = [entry["token"] for entry in body["choices"][0]["logprobs"]["content"]]
        assert tokens == [entry["token"] for entry in single["choices"][0]["logprobs"]["content"]]
        assert body["usage"]["completion_tokens"] == single["usage"]["completion_tokens"]
        assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]


def test_a_refused_line_gets_its_own_error_and_the_others_run(http):
    bodies = [chat_body(QUESTIONS[0]), chat_body(QUESTIONS[1], temperature=-1), chat_body(QUESTIONS[2], n=2),
              chat_body(QUESTIONS[0], model="no-such-model"), chat_body(QUESTIONS[1], stream=True),
              {"messages": "not a list"}]
    lines = output_lines(post_batch(http, batch_file(bodies)))
    statuses = [line["response"]["status_code"] for line in lines]
    assert statuses == [200, 400, 400, 404, 400, 400]
    errors = [line["response"]["body"].get("error") for line in lines]
    assert errors[0] is None and lines[0]["response"]["body"]["choices"][0]["message"]["content"]
    assert errors[1]["param"] == "temperature" and errors[2]["param"] == "n"
    assert errors[3]["code"] == "model_not_found" and errors[4]["param"] == "stream"
    assert errors[5]["code"] == "invalid_value"
    assert all(line["error"] is None for line in lines)


def test_a_malformed_file_is_refused_whole_naming_the_line(http):
    good = batch_file([chat_body(QUESTIONS[0])]).decode()
    wrong_url = good.replace("/v1/chat/completions", "/v1/embeddings")
    cases = [
        (good + "\n{not json", "line 2", "invalid_batch"),
        (good + "\n" + json.dumps({"custom_id": "x", "body": {}}), "line 2", "invalid_batch"),
        (wrong_url, "line 1", "invalid_batch"),
        (good + "\n" + good, "repeats custom_id", "invalid_batch"),
        ("\n\n", "empty", "invalid_batch"),
    ]
    for content, words, code in cases:
        response = post_batch(http, content.encode())
        assert response.status_code == 400, (content, response.text)
        error = response.json()["error"]
        assert words in error["message"] and error["code"] == code
    too_many = batch_file([chat_body("x")] * 1025, [str(i) for i in range(1025)])
    response = post_batch(http, too_many)
    assert response.status_code == 400 and response.json()["error"]["code"] == "batch_too_large"


def test_a_line_break_inside_a_json_string_does_not_split_the_line(http):
    body = chat_body("Repeat after me:\u2028one\u2029two")
    content = json.dumps({"custom_id": "only", "method": "POST", "url": "/v1/chat/completions", "body": body},
                         ensure_ascii=False).encode()
    assert [line["custom_id"] for line in output_lines(post_batch(http, content))] == ["only"]


def test_the_batch_needs_the_api_key(engine_server):
    import httpx

    jsonl = {"Content-Type": "application/jsonl"}
    response = httpx.post(f"{engine_server.base_url}/v1/batch", content=batch_file([chat_body("x")]), timeout=30,
                          headers=jsonl)
    assert response.status_code == 401
    response = httpx.post(f"{engine_server.base_url}/v1/batch", content=batch_file([chat_body("x")]), timeout=60,
                          headers={"Authorization": f"Bearer {API_KEY}", **jsonl})
    assert response.status_code == 200
