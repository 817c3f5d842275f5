"""ZIP packages (OOXML, OpenDocument, EPUB) checked from their central directory before any
converter sees them, and the two small entries that say what kind of document they hold.

A package is refused, with a message for its sender, before a byte of its content is inflated:

| refused when                                           | error                      |
|--------------------------------------------------------|----------------------------|
| not a readable ZIP (bad central directory, CRC errors) | `CorruptDocumentError`     |
| an entry is encrypted (a password-protected file)      | `CorruptDocumentError`     |
| more entries than `max_package_entries`                | `DocumentTooLargeError`    |
| declared sizes summing past `max_package_unpacked_bytes` | `DocumentTooLargeError`  |
| an entry over 1 MiB inflating more than `max_package_ratio` times | `DocumentTooLargeError` (a deflate bomb) |

The declared sizes can lie; the converter's own budget (vision/office.py: time, memory, output
size) bounds what a lying package can cost. The two entries read here (`mimetype`,
`[Content_Types].xml`) are inflated through a capped reader, so they cannot lie their way past
`MAX_TYPE_ENTRY_BYTES` either.
"""
from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from vision.limits import CorruptDocumentError, DocumentTooLargeError, InputError, VisionLimits

ZIP_MAGIC = b"PK\x03\x04"
MAX_TYPE_ENTRY_BYTES = 1024 * 1024   # `mimetype` is a line; [Content_Types].xml a few KiB
RATIO_CHECKED_FROM_BYTES = 1024 * 1024   # small entries may compress very well (a page of spaces)


@dataclass(frozen=True)
class PackageInfo:
    mimetype: str | None         # OpenDocument and EPUB: the `mimetype` entry's text
    content_types: str | None    # OOXML: `[Content_Types].xml`
    num_entries: int
    unpacked_bytes: int          # the sum of the entries' declared sizes


def read_package(source: bytes | Path, limits: VisionLimits) -> PackageInfo:
    """The package's type entries, after its central directory passed the caps."""
    try:
        with zipfile.ZipFile(io.BytesIO(source) if isinstance(source, bytes) else source) as package:
            entries = package.infolist()
            _check_entries(entries, limits)
            return PackageInfo(_small_entry(package, "mimetype"), _small_entry(package, "[Content_Types].xml"),
                               len(entries), sum(entry.file_size for entry in entries))
    except InputError:   # a cap broken, said as such (InputError is a ValueError too)
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, ValueError,
            zlib.error) as exc:
        # NotImplementedError: a compression method zipfile lacks; ValueError: a malformed header field;
        # zlib.error: a type entry whose deflate stream is broken (found by the intake fuzzer).
        raise CorruptDocumentError("the document is a damaged ZIP package and cannot be read") from exc


def _check_entries(entries: list[zipfile.ZipInfo], limits: VisionLimits) -> None:
    if len(entries) > limits.max_package_entries:
        raise DocumentTooLargeError(f"the document's package holds {len(entries):,} files; "
                                    f"the limit is {limits.max_package_entries:,}")
    unpacked = 0
    for entry in entries:
        if entry.flag_bits & 0x1:
            raise CorruptDocumentError("the document's package is encrypted; save it without a password "
                                       "and upload it again")
        unpacked += entry.file_size
        if entry.file_size > RATIO_CHECKED_FROM_BYTES \
                and entry.file_size > limits.max_package_ratio * max(entry.compress_size, 1):
            raise DocumentTooLargeError(
                f"a file in the document's package inflates {entry.file_size // max(entry.compress_size, 1):,} "
                f"times (to {entry.file_size:,} bytes); the limit is {limits.max_package_ratio} times: "
                "it looks like a ZIP bomb")
    if unpacked > limits.max_package_unpacked_bytes:
        raise DocumentTooLargeError(f"the document's package unpacks to {unpacked:,} bytes; "
                                    f"the limit is {limits.max_package_unpacked_bytes:,}")


def _small_entry(package: zipfile.ZipFile, name: str) -> str | None:
    try:
        info = package.getinfo(name)
    except KeyError:
        return None
    if info.file_size > MAX_TYPE_ENTRY_BYTES:
        raise CorruptDocumentError(f"the document's {name} is {info.file_size:,} bytes; a real one is small")
    with package.open(info) as entry:
        data = entry.read(MAX_TYPE_ENTRY_BYTES + 1)   # the declared size may lie: read at most the cap
    if len(data) > MAX_TYPE_ENTRY_BYTES:
        raise CorruptDocumentError(f"the document's {name} is larger than a real one")
    return data.decode("utf-8", "replace")
