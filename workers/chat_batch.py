"""Many chat completions in one HTTP request, where the endpoint has our engine's `POST /v1/batch`
(engine/server/routes_batch.py): the body is an OpenAI Batch API input file (JSON Lines, each
line a /v1/chat/completions body under a `custom_id`), the answer its output file, run at once.
A page's line crops then cost one HTTP exchange per few dozen lines instead of one each.

Whether an endpoint has it is asked once, with an empty batch: our engine answers 400
`invalid_batch`; vLLM, SGLang or OpenAI answer 404 (no such route) and are sent one request
per crop as before.
"""
from __future__ import annotations

import asyncio
import json

import httpx

from workers.recognizers.base import RecognizerUnavailableError

BATCH_PATH = "/batch"
CHAT_URL = "/v1/chat/completions"
JSONL = {"Content-Type": "application/jsonl"}
MAX_BATCH_BYTES = 4 << 20   # well under the engine's default request cap (32 MiB), however wide the crops


async def supports_batch(client: httpx.AsyncClient) -> bool | None:
    """True where POST /batch is our engine's, False where the server has no such endpoint
    (404, 405), None when it cannot tell now (unreachable, loading, a bad key: asked again
    next time; the per-request path says what is wrong meanwhile)."""
    try:
        response = await client.post(BATCH_PATH, content=b"", headers=JSONL)
    except httpx.TransportError:
        return None
    if response.status_code in (404, 405):
        return False
    try:
        code = (response.json().get("error") or {}).get("code")
    except (ValueError, AttributeError):
        return None
    return True if response.status_code == 400 and code == "invalid_batch" else None


async def run_batches(client: httpx.AsyncClient, bodies: dict[int, dict], max_lines: int,
                      max_in_flight: int) -> tuple[dict[int, tuple[int, dict]], list[tuple[list[int], httpx.Response]]]:
    """Send every chat body (key: the caller's index) in batches of at most `max_lines` lines and
    MAX_BATCH_BYTES, `max_in_flight` batches at a time. Returns each line's (status, body), and
    the batches refused as a whole ((their indexes, the response)). A batch too large for the
    server (413) is split in two until it fits."""
    encoded = {i: json.dumps({"custom_id": str(i), "method": "POST", "url": CHAT_URL, "body": body},
                             separators=(",", ":")).encode() for i, body in bodies.items()}
    chunks: list[list[int]] = [[]]
    size = 0
    for i, line in encoded.items():
        if chunks[-1] and (len(chunks[-1]) >= max_lines or size + len(line) > MAX_BATCH_BYTES):
            chunks.append([])
            size = 0
        chunks[-1].append(i)
        size += len(line) + 1
    replies: dict[int, tuple[int, dict]] = {}
    refused: list[tuple[list[int], httpx.Response]] = []
    semaphore = asyncio.Semaphore(max_in_flight)

    async def send(indexes: list[int]) -> None:
        async with semaphore:
            try:
                response = await client.post(BATCH_PATH, content=b"\n".join(encoded[i] for i in indexes),
                                             headers=JSONL)
            except httpx.TransportError as exc:   # connect/read/write errors and timeouts
                raise RecognizerUnavailableError(
                    f"the recogniser at {client.base_url} is unreachable ({type(exc).__name__})") from exc
        if response.status_code == 413 and len(indexes) > 1:
            half = len(indexes) // 2
            await asyncio.gather(send(indexes[:half]), send(indexes[half:]))
        elif response.status_code != 200:
            refused.append((indexes, response))
        else:
            for raw in response.content.splitlines():
                if raw.strip():
                    line = json.loads(raw)
                    answer = line.get("response") or {}
                    replies[int(line["custom_id"])] = (answer.get("status_code", 500), answer.get("body") or {})

    await asyncio.gather(*(send(chunk) for chunk in chunks if chunk))
    return replies, refused
