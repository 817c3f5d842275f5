"""A job's upload, received part by part: each file streamed to disk with its cap
checked as its bytes arrive, never a whole file in memory.

`receive_form` reads the request body chunk by chunk through python-multipart's
push parser. A file part goes to a 0600 file in the data directory's incoming
area (`DataDir.incoming_dir`, the file system the job's uploads live on, so
taking it into a job is a rename); the moment a part passes its cap the request
is refused (413), and whatever was received is deleted. Text fields and a
schema sent as a file are small and capped at the schema's limit, so they are
kept in memory.

| bounded              | by                                                          |
|----------------------|-------------------------------------------------------------|
| bytes of one file    | `max_file_bytes`, counted as chunks arrive                  |
| files, fields        | `max_files` (+1 schema file part), `max_fields`             |
| a text field, schema | `max_field_bytes` (the schema limit)                        |
| a part's headers     | python-multipart's header count and size caps              |
| memory of the API    | one body chunk + the small fields, whatever the file sizes |
| uploads at once      | `UploadGate`: over its limit a request is turned away (503, Retry-After) before its body is read |
| a stalled client     | `idle_timeout_s` between body chunks (`upload_idle_timeout_s`): past it 408, slot freed |

The caller owns the `ReceivedForm` and must `discard()` it: files a job took
(moved into place) are gone already, the rest are deleted.
"""
from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header

from app.errors import ApiError
from vision.limits import DocumentTooLargeError
from workers.extraction_schema import SchemaError
from workers.job_service import TooManyFilesError

SCHEMA_PART = "schema"
RETRY_AFTER_S = 2


@dataclass(frozen=True)
class FormLimits:
    max_file_bytes: int
    max_files: int          # document parts; one schema file part may come besides
    max_field_bytes: int    # a text field, or the schema as a file part
    max_fields: int = 8
    idle_timeout_s: float = 30.0    # the longest wait for the next body chunk; past it 408


@dataclass
class ReceivedFile:
    name: str               # the form field's name
    filename: str
    path: Path              # under the incoming area; a job may move it away
    size: int = 0
    _file: object = None    # the open file while its part arrives


@dataclass
class ReceivedForm:
    fields: list[tuple[str, str]] = field(default_factory=list)
    files: list[ReceivedFile] = field(default_factory=list)            # documents, on disk
    schema_files: list[bytes] = field(default_factory=list)           # small, in memory

    def discard(self) -> None:
        """Delete every received file a job did not take."""
        for received in self.files:
            if received._file is not None:
                received._file.close()
                received._file = None
            received.path.unlink(missing_ok=True)


class UploadGate:
    """At most `limit` uploads at once in this API process; the next is refused at once (503 with
    Retry-After) rather than queued, so a burst of large uploads cannot fill the disk or memory."""

    def __init__(self, limit: int):
        self.limit = limit
        self.num_active = 0

    @contextmanager
    def admit(self) -> Iterator[None]:
        # Runs on the event loop: the check and the increment are not separated by an await.
        if self.num_active >= self.limit:
            raise ApiError(503, "too_many_uploads",
                           f"the server is receiving {self.limit} uploads already; try again in a few seconds",
                           headers={"Retry-After": str(RETRY_AFTER_S)})
        self.num_active += 1
        try:
            yield
        finally:
            self.num_active -= 1


async def _chunks(request: Request, idle_timeout_s: float) -> AsyncIterator[bytes]:
    """The body's chunks as they arrive; a client that sends nothing for `idle_timeout_s` gets 408."""
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), idle_timeout_s)
        except StopAsyncIteration:
            return
        except asyncio.TimeoutError:
            raise ApiError(408, "request_timeout", f"the upload sent nothing for {idle_timeout_s:g} s; "
                           "it was ended (send the whole body without long pauses)",
                           headers={"Connection": "close"}) from None
        yield chunk


async def receive_form(request: Request, incoming_dir: Path, limits: FormLimits) -> ReceivedForm:
    """The request's form: documents streamed to files under `incoming_dir`, fields in memory.
    Raises an InputError/ApiError (nothing left on disk) when a cap is passed or the body is bad."""
    content_type, params = parse_options_header(request.headers.get("content-type", ""))
    if content_type == b"application/x-www-form-urlencoded":
        return await _receive_urlencoded(request, limits)
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise ApiError(400, "invalid_request", "send the documents as multipart/form-data (a 'files' part each)")
    form = ReceivedForm()
    try:
        await _receive_multipart(request, boundary, incoming_dir, limits, form)
    except BaseException:
        form.discard()
        raise
    return form


class _PartReader:
    """python-multipart's callbacks, turned into one event list per body chunk."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []
        self._header_field = b""
        self._header_value = b""
        self._headers: dict[bytes, bytes] = {}

    def callbacks(self) -> dict:
        return {
            "on_part_begin": self._begin, "on_part_data": self._data, "on_part_end": self._end,
            "on_header_field": self._field, "on_header_value": self._value, "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
        }

    def _begin(self) -> None:
        self._headers = {}

    def _field(self, data: bytes, start: int, end: int) -> None:
        self._header_field += data[start:end]

    def _value(self, data: bytes, start: int, end: int) -> None:
        self._header_value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._header_field.lower()] = self._header_value
        self._header_field = self._header_value = b""

    def _headers_finished(self) -> None:
        self.events.append(("part", self._headers))

    def _data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self.events.append(("data", data[start:end]))

    def _end(self) -> None:
        self.events.append(("end", None))


async def _receive_multipart(request: Request, boundary: bytes, incoming_dir: Path, limits: FormLimits,
                             form: ReceivedForm) -> None:
    reader = _PartReader()
    parser = MultipartParser(boundary, reader.callbacks())
    part: _Part | None = None
    async for chunk in _chunks(request, limits.idle_timeout_s):
        try:
            parser.write(chunk)
        except FormParserError as exc:
            raise ApiError(400, "invalid_request", f"the upload is not valid multipart form data ({exc})") from None
        writes: list[tuple[ReceivedFile, bytes]] = []
        for kind, payload in reader.events:
            if kind == "part":
                part = _Part.begin(payload, form, incoming_dir, limits)
            elif kind == "data":
                assert part is not None
                part.take(payload, writes, limits)
            else:
                assert part is not None
                part.finish(form)
                part = None
        reader.events.clear()
        if writes:   # disk writes off the event loop, one hop per body chunk
            await asyncio.to_thread(_write_all, writes)
    try:
        parser.finalize()
    except FormParserError as exc:
        raise ApiError(400, "invalid_request", f"the upload is not valid multipart form data ({exc})") from None
    if part is not None:
        raise ApiError(400, "invalid_request", "the upload ended in the middle of a part")
    await asyncio.to_thread(_sync_all, form.files)


@dataclass
class _Part:
    name: str
    file: ReceivedFile | None       # a document part
    buffer: bytearray | None        # a text field or the schema file part
    is_schema_file: bool = False

    @classmethod
    def begin(cls, headers: dict[bytes, bytes], form: ReceivedForm, incoming_dir: Path,
              limits: FormLimits) -> _Part:
        disposition, options = parse_options_header(headers.get(b"content-disposition", b""))
        if disposition != b"form-data" or b"name" not in options:
            raise ApiError(400, "invalid_request", "every part of the upload needs "
                           "'Content-Disposition: form-data; name=...'")
        name = options[b"name"].decode("utf-8", "replace")
        if b"filename" not in options:
            if len(form.fields) >= limits.max_fields:
                raise ApiError(400, "invalid_request", f"too many form fields; the limit is {limits.max_fields}")
            return cls(name, None, bytearray())
        filename = options[b"filename"].decode("utf-8", "replace")
        if name == SCHEMA_PART:
            if form.schema_files:
                raise SchemaError("send one schema: as a form field or as a file part, once")
            return cls(name, None, bytearray(), is_schema_file=True)
        if len(form.files) >= limits.max_files:
            raise TooManyFilesError(f"too many files in one job; the limit is {limits.max_files}")
        incoming_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=incoming_dir, prefix="upload-", suffix=".part")   # mode 0600
        received = ReceivedFile(name, filename, Path(tmp_name), 0, os.fdopen(fd, "wb"))
        form.files.append(received)   # from here on `discard` deletes it, whatever happens
        return cls(name, received, None)

    def take(self, data: bytes, writes: list[tuple[ReceivedFile, bytes]], limits: FormLimits) -> None:
        if self.file is not None:
            self.file.size += len(data)
            if self.file.size > limits.max_file_bytes:
                raise DocumentTooLargeError(f"{self.file.filename or 'an upload'} is larger than the "
                                            f"{limits.max_file_bytes:,}-byte limit")
            writes.append((self.file, data))
            return
        assert self.buffer is not None
        self.buffer += data
        if len(self.buffer) > limits.max_field_bytes:
            what = "the schema" if self.is_schema_file else "a form field"
            raise SchemaError(f"{what} is larger than the {limits.max_field_bytes:,}-byte limit"
                              + ("" if self.is_schema_file else " (the limit for a schema)"))

    def finish(self, form: ReceivedForm) -> None:
        if self.file is not None:
            return   # closed (and synced) once the body is complete
        assert self.buffer is not None
        if self.is_schema_file:
            form.schema_files.append(bytes(self.buffer))
            return
        try:
            form.fields.append((self.name, self.buffer.decode("utf-8")))
        except UnicodeDecodeError:
            raise ApiError(400, "invalid_request", f"form field {self.name[:30]!r} is not UTF-8 text") from None


def _write_all(writes: list[tuple[ReceivedFile, bytes]]) -> None:
    for received, data in writes:
        received._file.write(data)


def _sync_all(files: list[ReceivedFile]) -> None:
    """Each received file complete on disk before a job takes it by a rename."""
    for received in files:
        handle = received._file
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        received._file = None


async def _receive_urlencoded(request: Request, limits: FormLimits) -> ReceivedForm:
    """A form without files (options only): refused later for having no document, but read capped."""
    max_bytes = limits.max_fields * (limits.max_field_bytes + 64)
    body = bytearray()
    async for chunk in _chunks(request, limits.idle_timeout_s):
        body += chunk
        if len(body) > max_bytes:
            raise SchemaError(f"a form field is larger than the {limits.max_field_bytes:,}-byte limit "
                              "(the limit for a schema)")
    pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
    if len(pairs) > limits.max_fields:
        raise ApiError(400, "invalid_request", f"too many form fields; the limit is {limits.max_fields}")
    return ReceivedForm(fields=pairs)
