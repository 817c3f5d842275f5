"""`ocrserve run` on a folder holding office and web documents, as a user runs it: each one found
by its extension, converted when submitted, read whole (its text layer, its picture recognised by
Tesseract: service_harness), and a document that cannot be converted reported with its reason.
"""
from __future__ import annotations

import io
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.batch_inputs import find_inputs
from service_harness import REPO_ROOT, service_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vision"))
import office_samples as samples  # noqa: E402

pytestmark = pytest.mark.slow


def test_a_folder_of_office_documents_is_read_and_a_broken_one_reported(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    samples.docx(folder / "survey.docx")
    samples.epub(folder / "book.epub")
    broken = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO((folder / "survey.docx").read_bytes())) as good, \
            zipfile.ZipFile(broken, "w") as out:
        for info in good.infolist():
            out.writestr(info.filename, b"<<< not XML" if info.filename == "word/document.xml" else good.read(info))
    (folder / "broken.docx").write_bytes(broken.getvalue())
    (folder / "notes.txt").write_text("not a document")
    assert [item.path.name for item in find_inputs([str(folder)])] == ["book.epub", "broken.docx", "survey.docx"]

    env = service_env(tmp_path / "unused-data-dir")
    env.pop("OCRSERVE_DATA_DIR")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "app.commands.run", str(folder), "--out", str(out), "--formats",
                           "txt", "--quiet"], env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stderr
    assert "3 input(s): 2 done, 1 failed, 0 skipped" in done.stderr, done.stderr
    assert "broken.docx: the DOCX document could not be converted to PDF" in done.stderr, done.stderr
    for name in ("survey", "book"):
        text = re.sub(r"\s+", " ", (out / f"{name}.txt").read_text())
        missing = [sentence for sentence in (samples.TITLE, *samples.SENTENCES) if sentence not in text]
        assert not missing, f"{name}: {missing} missing from {text!r}"
        assert all(word in text.upper() for word in samples.PICTURE_WORDS), text
