"""Proof that requests shared engine steps, without sampling a gauge on a clock.

Sampling `ocrserve_requests_running` every 50 ms can miss a peak (a loaded machine
starts the client threads late; a fast one finishes the batch between samples).
Instead, hold the requests open: each is a stream that cannot end soon
(`ignore_eos`, a long `max_tokens`), its client reads only its first token and
then waits. Once every stream has its first token, every one of them is in
flight at the same moment (none can have run its `HOLD_TOKENS` steps unless the
requests were run one after another), so the scheduler's running gauge, set at
every step, reads them all: a value of N means N requests ran in one step. The
streams are then closed, which aborts them.
"""
from __future__ import annotations

import json
import threading

import httpx

HOLD_TOKENS = 400   # steps a held request needs before it could end by itself


def hold_together(engine_server, bodies: list[dict], api_key: str, path: str = "/v1/chat/completions") -> dict:
    """Open `bodies` as held streams at once; return /metrics read while all are in flight."""
    aborts_before = engine_server.metrics()["ocrserve_request_aborts_total"]
    have_first_token = threading.Barrier(len(bodies) + 1, timeout=600)
    release = threading.Event()
    errors: list[BaseException] = []

    def hold(body: dict) -> None:
        held = {**body, "stream": True, "ignore_eos": True, "max_tokens": HOLD_TOKENS}
        try:
            with httpx.stream("POST", engine_server.base_url + path, json=held, timeout=600,
                              headers={"Authorization": f"Bearer {api_key}"}) as response:
                assert response.status_code == 200, response.read()
                # Keep the iterator referenced: a dropped one closes the connection, which aborts the request.
                lines = response.iter_lines()
                for line in lines:   # up to the first chunk that carries a token (not the role)
                    if line.startswith("data: ") and line != "data: [DONE]":
                        chunk = json.loads(line[len("data: "):])
                        assert "error" not in chunk, line
                        if any(choice.get("text") or (choice.get("delta") or {}).get("content")
                               for choice in chunk.get("choices", [])):
                            break
                have_first_token.wait()
                release.wait(600)
                del lines
        except BaseException as exc:      # noqa: BLE001 - surfaced to the test below
            errors.append(exc)
            have_first_token.abort()

    threads = [threading.Thread(target=hold, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    try:
        have_first_token.wait()
        metrics = engine_server.metrics()
    finally:
        release.set()
        for thread in threads:
            thread.join(120)
    assert not errors, errors
    assert metrics["ocrserve_request_aborts_total"] == aborts_before, "a held stream was dropped before the look"
    return metrics
