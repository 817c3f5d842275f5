"""API keys: who is calling, and so whose jobs they see.

Keys come from `OCRSERVE_API_KEYS` (comma-separated, for quick set-ups and
tests) and from the keys file (`OCRSERVE_API_KEYS_FILE`, default
DATA_DIR/api-keys), one `name:sha256-of-key` per line, written by
`ocrserve keys add NAME`. Only hashes are kept; a key is shown once, when made.

A caller is identified by the SHA-256 of its key: jobs are stored under that
owner id, so a key sees exactly its own jobs whichever source it came from.

The auth mode is decided once, when the API starts (`OCRSERVE_AUTH`), and
never changes while it runs:

| mode | what a request needs |
|---|---|
| `keys` | a known key; with no key readable (file emptied, deleted, unreadable, malformed) every request is refused with 503, never let in anonymously |
| `none` | nothing: every job belongs to `anonymous`; `ocrserve api`/`serve` then bind to loopback only |
| `auto` (default) | `keys` when `OCRSERVE_API_KEYS` is set or the keys file exists at start-up, else `none` |

The keys file is read again whenever it changes, so keys added or removed
take effect without a restart; it is always replaced whole (temp file, fsync,
rename), so a reader never sees half of it.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workers.data_dir import make_private_dirs

logger = logging.getLogger("ocrserve.app")

ANONYMOUS = "anonymous"
KEY_PREFIX = "ocr_"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HASH_PATTERN = re.compile(r"^[0-9a-f]{64}$")

AuthMode = Literal["keys", "none"]


class KeysFileError(ValueError):
    """The keys file is malformed, or a key name is refused; the message says where."""


class KeysUnavailableError(RuntimeError):
    """Keys are required but none can be read now: every request is refused until one can."""


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
    with _locked(path):
        entries = read_keys_file(path)
        if any(entry.name == name for entry in entries):
            raise KeysFileError(f"a key named {name!r} already exists in {path}; remove it first")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        write_keys_file(path, [*entries, ApiKeyEntry(name, hash_key(key))])
    return key


def remove_key(path: Path, name: str) -> bool:
    with _locked(path):
        entries = read_keys_file(path)
        kept = [entry for entry in entries if entry.name != name]
        if len(kept) == len(entries):
            return False
        write_keys_file(path, kept)
    return True


def write_keys_file(path: Path, entries: list[ApiKeyEntry]) -> None:
    """Replace the file whole, owner-only: a reader sees the old list or the new one, never a
    truncated file in between (which a keyed API would read as "no keys")."""
    make_private_dirs(path.parent)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as keys_file:
            os.fchmod(keys_file.fileno(), 0o600)
            keys_file.write("".join(f"{entry.name}:{entry.sha256}\n" for entry in entries))
            keys_file.flush()
            os.fsync(keys_file.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)   # the rename itself survives a crash
    finally:
        os.close(directory)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Serialise `keys add`/`remove` runs, so two at once cannot lose each other's change."""
    make_private_dirs(path.parent)   # 0700 whatever the umask: it holds the keys
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class KeyRing:
    """The configured keys and the auth mode, fixed at construction (see the module docstring)."""

    def __init__(self, env_keys: str | None, keys_file: Path, mode: Literal["auto", "keys", "none"] = "auto"):
        self._env_hashes = {hash_key(key.strip()) for key in (env_keys or "").split(",") if key.strip()}
        self.keys_file = keys_file
        self._file_hashes: set[str] = set()
        self._file_stamp: tuple[int, int, int] | None = None
        self._file_error: str | None = None
        self._lock = threading.Lock()   # handlers run on a thread pool: one refresh at a time
        if mode == "auto":
            mode = "keys" if self._env_hashes or _exists(keys_file) else "none"
        self.mode: AuthMode = mode
        if mode == "keys":
            self._refresh()

    @classmethod
    def from_settings(cls, settings) -> KeyRing:   # workers.settings.Settings
        return cls(settings.api_keys, settings.keys_file, settings.auth)

    @property
    def is_open(self) -> bool:
        return self.mode == "none"

    def owner_for(self, presented: str | None) -> str | None:
        """The caller's owner id, or None when the key is missing or unknown.
        Raises KeysUnavailableError in `keys` mode when no key can be read at all."""
        if self.is_open:
            return ANONYMOUS
        with self._lock:
            self._refresh()
            file_error, known = self._file_error, self._env_hashes | self._file_hashes
        if file_error is not None:
            raise KeysUnavailableError(f"the API keys cannot be read ({file_error}); "
                                       "every request is refused until they can")
        if not known:
            raise KeysUnavailableError("this API requires keys and none is configured "
                                       f"(the keys file {self.keys_file.name!r} is empty or missing); "
                                       "add one with `ocrserve keys add NAME`")
        if not presented:
            return None
        digest = hash_key(presented)
        # Compare against every hash so the time taken does not depend on which one matched.
        matched = [hmac.compare_digest(digest, candidate) for candidate in known]
        return digest if any(matched) else None

    def _refresh(self) -> None:
        try:
            stat = self.keys_file.stat()
            stamp: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            stamp = None
        except OSError as exc:
            self._fail(exc)
            return
        if stamp == self._file_stamp and self._file_error is None:
            return
        try:
            hashes = {entry.sha256 for entry in read_keys_file(self.keys_file)} if stamp else set()
        except (OSError, UnicodeDecodeError, KeysFileError) as exc:
            self._fail(exc)
            return
        self._file_hashes, self._file_stamp, self._file_error = hashes, stamp, None

    def _fail(self, exc: Exception) -> None:
        """Fail closed: no key from the file counts until it reads cleanly again."""
        if self._file_error is None:
            logger.error("API keys: cannot read %s: %s; refusing every request until it reads cleanly",
                         self.keys_file, exc)
        self._file_hashes, self._file_stamp = set(), None
        # The client is told what kind of trouble, not the server's paths.
        self._file_error = "the keys file is malformed" if isinstance(exc, KeysFileError) else type(exc).__name__


def _exists(path: Path) -> bool:
    """Whether a keys file is there; one that cannot even be checked counts as there (fail closed)."""
    try:
        path.stat()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True
