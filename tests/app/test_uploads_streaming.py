"""Uploads are streamed part by part to the data directory: memory stays bounded
whatever the file size, a part over its cap is refused while it is still
arriving, nothing of a refused upload stays on disk, and only a bounded number
of uploads are received at once. In-process ASGI client streaming real bodies
(chunk by chunk through the app's `receive`), the embedded broker."""
from __future__ import annotations

import asyncio
import os
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pymupdf
import pytest

from app.main import create_app
from workers.settings import Settings

KEY = "upload-test-key"
BOUNDARY = "upload-test-boundary"
CHUNK = 64 * 1024


def _settings(tmp_path: Path, **overrides) -> Settings:
    return Settings(data_dir=tmp_path / "data", api_keys=KEY, **overrides)


def _big_pdf(path: Path, num_bytes: int) -> Path:
    """A valid one-page PDF made large by a stream nothing draws."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "a large upload")
    xref = doc.get_new_xref()
    doc.update_object(xref, "<<>>")
    doc.update_stream(xref, os.urandom(num_bytes), compress=False)
    doc.save(path)
    doc.close()
    return path


def _multipart(parts: list[tuple[str, str | None, Path | bytes]], sent: list[int],
               pause: asyncio.Event | None = None, paused: asyncio.Event | None = None) -> AsyncIterator[bytes]:
    """A multipart body read from disk in CHUNK pieces; `sent[0]` counts the bytes handed over.
    With `pause`, the body stops after its first file chunk (setting `paused`) until `pause` is set."""
    async def body() -> AsyncIterator[bytes]:
        for name, filename, content in parts:
            disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
            head = f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
            sent[0] += len(head)
            yield head
            if isinstance(content, bytes):
                sent[0] += len(content)
                yield content
            else:
                with open(content, "rb") as f:
                    while chunk := f.read(CHUNK):
                        sent[0] += len(chunk)
                        yield chunk
                        if pause is not None and not pause.is_set():
                            paused.set()
                            await pause.wait()
            yield b"\r\n"
        yield f"--{BOUNDARY}--\r\n".encode()
    return body()


def _headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {KEY}", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


def _incoming(settings: Settings) -> list[Path]:
    return sorted((Path(settings.data_dir) / "uploads" / ".incoming").iterdir())


def test_a_large_upload_is_streamed_to_disk_in_bounded_memory(tmp_path):
    size = 48 * 1024 * 1024
    pdf = _big_pdf(tmp_path / "big.pdf", size)
    small = _big_pdf(tmp_path / "small.pdf", CHUNK)
    settings = _settings(tmp_path, max_upload_bytes=size + 1024 * 1024)
    app = create_app(settings)

    async def run() -> tuple[httpx.Response, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            # A small job first: the queue connection and what it imports are made once, outside the measure.
            warm_up = await client.post("/v1/jobs", headers=_headers(), content=_multipart(
                [("files", "small.pdf", small)], [0]))
            assert warm_up.status_code == 202, warm_up.text
            sent = [0]
            tracemalloc.start()
            try:
                response = await client.post("/v1/jobs", headers=_headers(), content=_multipart(
                    [("formats", None, b"md"), ("files", "big.pdf", pdf)], sent))
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            return response, peak

    response, peak = asyncio.run(run())
    assert response.status_code == 202, response.text
    job = response.json()
    assert len(job["pages"]) == 1
    # The old path held the whole file (twice, joining its chunks); now one chunk at a time.
    assert peak < pdf.stat().st_size / 8, f"peak {peak:,} bytes for a {pdf.stat().st_size:,}-byte upload"
    stored = Path(settings.data_dir) / "uploads" / job["id"] / "0.pdf"
    assert stored.read_bytes() == pdf.read_bytes()
    assert _incoming(settings) == []


def test_a_part_over_the_cap_is_refused_while_it_arrives(tmp_path):
    cap = 1024 * 1024
    pdf = _big_pdf(tmp_path / "big.pdf", 32 * cap)
    settings = _settings(tmp_path, max_upload_bytes=cap)
    app = create_app(settings)
    sent = [0]

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post("/v1/jobs", headers=_headers(),
                                     content=_multipart([("files", "big.pdf", pdf)], sent))

    response = asyncio.run(run())
    assert response.status_code == 413 and response.json()["error"]["code"] == "document_too_large"
    assert "big.pdf is larger than the 1,048,576-byte limit" in response.json()["error"]["message"]
    # Refused the moment the part passed the cap: the rest of the 32 MiB body was never read.
    assert sent[0] <= cap + 2 * CHUNK, sent[0]
    assert _incoming(settings) == []
    assert list((Path(settings.data_dir) / "uploads").iterdir()) == [Path(settings.data_dir) / "uploads" / ".incoming"]


def test_a_refused_document_leaves_nothing_on_disk(tmp_path):
    settings = _settings(tmp_path)
    app = create_app(settings)
    (tmp_path / "junk.pdf").write_bytes(b"this is not a pdf at all" * 100)

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post("/v1/jobs", headers=_headers(),
                                     content=_multipart([("files", "junk.pdf", tmp_path / "junk.pdf")], [0]))

    response = asyncio.run(run())
    assert response.status_code == 415, response.text
    assert _incoming(settings) == []


def test_uploads_at_once_are_bounded(tmp_path):
    pdf = _big_pdf(tmp_path / "doc.pdf", 4 * CHUNK)
    settings = _settings(tmp_path, max_concurrent_uploads=1)
    app = create_app(settings)

    async def run() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            pause, paused = asyncio.Event(), asyncio.Event()
            first = asyncio.create_task(client.post("/v1/jobs", headers=_headers(), content=_multipart(
                [("files", "doc.pdf", pdf)], [0], pause, paused)))
            await paused.wait()                      # the first upload is mid-body, holding its place
            second = await client.post("/v1/jobs", headers=_headers(),
                                       content=_multipart([("files", "doc.pdf", pdf)], [0]))
            pause.set()
            first_response = await first
            third = await client.post("/v1/jobs", headers=_headers(),
                                      content=_multipart([("files", "doc.pdf", pdf)], [0]))
            return first_response, second, third

    first, second, third = asyncio.run(run())
    assert second.status_code == 503 and second.json()["error"]["code"] == "too_many_uploads"
    assert int(second.headers["Retry-After"]) > 0
    assert first.status_code == 202, first.text
    assert third.status_code == 202, third.text      # the place is given back when an upload ends


@pytest.mark.parametrize("parts, status, code", [
    ([("schema", "s.json", b"{" + b" " * 70_000 + b"}"), ("files", "a.pdf", b"%PDF")], 400, "invalid_schema"),
    ([("pages", None, b"1" * 70_000)], 400, "invalid_schema"),
])
def test_small_parts_are_capped_too(tmp_path, parts, status, code):
    settings = _settings(tmp_path)
    app = create_app(settings)

    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.post("/v1/jobs", headers=_headers(), content=_multipart(parts, [0]))

    response = asyncio.run(run())
    assert response.status_code == status and response.json()["error"]["code"] == code, response.text
