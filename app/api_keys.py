"""API keys: who is calling, and so whose jobs they see.

Keys come from `OCRSERVE_API_KEYS` (comma-separated, for quick set-ups and
tests) and from the keys file (`OCRSERVE_API_KEYS_FILE`, default
DATA_DIR/api-keys), one `name:sha256-of-key` per line, written by
`ocrserve keys add NAME`. Only hashes are kept; a key is shown once, when made.

A caller is identified by the SHA-256 of its key: jobs are stored under that
owner id, so a key sees exactly its own jobs whichever source it came from.
With no key configured at all, the API is open and every job belongs to
`anonymous` (`ocrserve serve` then binds to loopback only).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

ANONYMOUS = "anonymous"
KEY_PREFIX = "ocr_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HASH_PATTERN = re.compile(r"^[0-9a-f]{64}$")


class KeysFileError(ValueError):
    """The keys file is malformed, or a key name is refused; the message says where."""


@dataclass(frozen=True)
class ApiKeyEntry:
    name: str
    sha256: str


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def read_keys_file(path: Path) -> list[ApiKeyEntry]:
    if not path.exists():
        return []
    entries = []
    for line_no, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, digest = line.rpartition(":")
        if not sep or not NAME_PATTERN.match(name) or not _HASH_PATTERN.match(digest.lower()):
            raise KeysFileError(f"{path}, line {line_no}: expected 'name:sha256-hex'")
        entries.append(ApiKeyEntry(name, digest.lower()))
    return entries


def add_key(path: Path, name: str) -> str:
    """Make a key named `name`, store its hash, return the key (the only time it is seen)."""
    if not NAME_PATTERN.match(name):
        raise KeysFileError(f"key name {name[:70]!r} must be 1-64 letters, digits, '_', '.' or '-'")
    entries = read_keys_file(path)
    if any(entry.name == name for entry in entries):
        raise KeysFileError(f"a key named {name!r} already exists in {path}; remove it first")
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as keys_file:
        keys_file.write(f"{name}:{hash_key(key)}\n")
    return key


def remove_key(path: Path, name: str) -> bool:
    entries = read_keys_file(path)
    kept = [entry for entry in entries if entry.name != name]
    if len(kept) == len(entries):
        return False
    path.write_text("".join(f"{entry.name}:{entry.sha256}\n" for entry in kept))
    return True


class KeyRing:
    """The configured keys; the file is read again whenever it changes, so keys
    added or removed while the API runs take effect without a restart."""

    def __init__(self, env_keys: str | None, keys_file: Path):
        self._env_hashes = {hash_key(key.strip()) for key in (env_keys or "").split(",") if key.strip()}
        self.keys_file = keys_file
        self._file_hashes: set[str] = set()
        self._file_stamp: tuple[int, int, int] | None = None
        self._refresh()

    @property
    def is_configured(self) -> bool:
        self._refresh()
        return bool(self._env_hashes or self._file_hashes)

    def owner_for(self, presented: str | None) -> str | None:
        """The caller's owner id, or None when the key is missing or unknown."""
        if not self.is_configured:
            return ANONYMOUS
        if not presented:
            return None
        digest = hash_key(presented)
        known = self._env_hashes | self._file_hashes
        # Compare against every hash so the time taken does not depend on which one matched.
        matched = [hmac.compare_digest(digest, candidate) for candidate in known]
        return digest if any(matched) else None

    def _refresh(self) -> None:
        try:
            stat = self.keys_file.stat()
            stamp: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = None
        if stamp == self._file_stamp:
            return
        self._file_hashes = {entry.sha256 for entry in read_keys_file(self.keys_file)} if stamp else set()
        self._file_stamp = stamp
