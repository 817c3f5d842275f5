"""The inputs of `ocrserve run`, where their results go, and which are already done.

Folders are walked (sorted, hidden entries skipped) for PDF, PNG, JPEG and
TIFF files, office documents (DOCX, ODT, RTF, PPTX, ODP, XLSX, ODS), HTML
pages and EPUB books (converted to PDF when submitted: vision/office.py). A file found under a folder argument keeps its path relative to
that folder inside the output directory; a file argument goes to the top of
it. Results are OUT/REL/NAME.{md,json,txt,pdf}, figures in OUT/REL/NAME.figures/.

A manifest (OUT/.ocrserve-run.json) records each finished input with the
SHA-256 of its bytes, the page selection and the formats written; an input is
skipped when all three match and its output files are still there.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.data_dir import write_atomically

INPUT_SUFFIXES = {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".docx", ".docm", ".odt", ".rtf", ".pptx", ".pptm",
                  ".odp", ".xlsx", ".xlsm", ".ods", ".html", ".htm", ".xhtml", ".epub"}
MANIFEST_NAME = ".ocrserve-run.json"


class BatchInputError(ValueError):
    pass


@dataclass(frozen=True)
class BatchInput:
    path: Path          # the file to read
    output_stem: Path   # OUT/REL/NAME, without suffix

    @property
    def key(self) -> str:
        """The manifest key: the output stem relative to the output directory."""
        return self.output_stem.as_posix()

    def output_path(self, out_dir: Path, fmt: str) -> Path:
        return out_dir / self.output_stem.parent / f"{self.output_stem.name}.{fmt}"

    def figures_dir(self, out_dir: Path) -> Path:
        return out_dir / self.output_stem.parent / f"{self.output_stem.name}.figures"


def find_inputs(arguments: list[str]) -> list[BatchInput]:
    found: list[BatchInput] = []
    stem_counts: dict[Path, int] = {}
    for argument in arguments:
        root = Path(argument)
        if root.is_dir():
            files = [(path, path.relative_to(root)) for path in _walk(root)]
        elif root.is_file():
            files = [(root, Path(root.name))]
        else:
            raise BatchInputError(f"{argument}: no such file or folder")
        for path, relative in files:
            stem = relative.with_suffix("")
            stem_counts[stem] = stem_counts.get(stem, 0) + 1
            if stem_counts[stem] > 1:   # the same name twice (a.pdf and a.png, or two arguments): number it
                stem = stem.with_name(f"{stem.name}-{stem_counts[stem]}")
            found.append(BatchInput(path, stem))
    return found


def _walk(root: Path) -> list[Path]:
    paths = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        paths += [Path(folder) / name for name in sorted(names)
                  if not name.startswith(".") and Path(name).suffix.lower() in INPUT_SUFFIXES]
    return paths


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class RunManifest:
    def __init__(self, out_dir: Path):
        self.path = out_dir / MANIFEST_NAME
        try:
            self.entries: dict[str, dict[str, Any]] = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (ValueError, OSError):
            self.entries = {}   # an unreadable manifest only costs a re-run

    def is_done(self, item: BatchInput, out_dir: Path, sha256: str, pages: str | None,
                formats: tuple[str, ...]) -> bool:
        entry = self.entries.get(item.key)
        if not entry or entry.get("sha256") != sha256 or entry.get("pages") != pages:
            return False
        if not set(formats) <= set(entry.get("formats", ())):
            return False
        return all(item.output_path(out_dir, fmt).exists() for fmt in formats)

    def record(self, item: BatchInput, sha256: str, pages: str | None, formats: tuple[str, ...]) -> None:
        self.entries[item.key] = {"source": str(item.path), "sha256": sha256, "pages": pages, "formats": list(formats)}
        write_atomically(self.path, json.dumps(self.entries, indent=1, sort_keys=True).encode())
