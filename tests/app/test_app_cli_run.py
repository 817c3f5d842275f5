"""`ocrserve run` on a folder, as a user runs it (its own process, which starts
and stops its own worker on an embedded broker): results per input, a failed
input reported and counted, resume, and --pages/--formats. Recognition is
Tesseract (OCRSERVE_RECOGNIZER=tesseract); see service_harness for why.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ocr_samples as samples
from app.batch_inputs import RunManifest, file_sha256, find_inputs
from service_harness import REPO_ROOT, service_env

pytestmark = pytest.mark.slow


def _run(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    env = service_env(tmp_path / "unused-data-dir")
    env.pop("OCRSERVE_DATA_DIR")
    return subprocess.run([sys.executable, "-m", "app.commands.run", *argv, "--quiet"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture()
def inputs(tmp_path):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "report.pdf").write_bytes(samples.multi_page_pdf(3))
    (folder / "sub" / "columns.pdf").write_bytes(samples.two_column_pdf())
    (folder / "sub" / "scan.png").write_bytes(samples.scanned_png())
    (folder / "locked.pdf").write_bytes(samples.encrypted_pdf())
    (folder / "notes.txt").write_text("not a document")
    return folder


def test_a_folder_is_read_resumed_and_narrowed_to_pages(tmp_path, inputs):
    out = tmp_path / "out"
    first = _run(tmp_path, str(inputs), "--out", str(out))
    assert first.returncode == 1, first.stderr
    assert "4 input(s): 3 done, 1 failed, 0 skipped" in first.stderr
    assert "locked.pdf: the PDF is password-protected" in first.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == [".ocrserve-run.json", *[f"report.{f}" for f in ("json", "md", "pdf", "txt")],
                       *[f"sub/columns.{f}" for f in ("json", "md", "pdf", "txt")],
                       *[f"sub/scan.{f}" for f in ("json", "md", "pdf", "txt")]]
    report = (out / "report.md").read_text()
    assert all(samples.page_sentence(n) in report for n in range(3))
    report_json = json.loads((out / "report.json").read_text())
    assert report_json["source"] == str(inputs / "report.pdf")
    sources = {r["source"] for page in report_json["documents"][0]["pages"] for r in page["regions"]}
    assert sources == {"text_layer"}, "by default a born-digital PDF takes its own text"
    scan_json = json.loads((out / "sub" / "scan.json").read_text())
    assert {r["source"] for r in scan_json["documents"][0]["pages"][0]["regions"]} == {"ocr"}
    assert samples.page_sentence(0) in (out / "sub" / "scan.txt").read_text()
    columns = (out / "sub" / "columns.txt").read_text()
    assert columns.index("Cherries") < columns.index("Tables")

    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.md")}
    again = _run(tmp_path, str(inputs), "--out", str(out))
    assert again.returncode == 1 and "0 done, 1 failed, 3 skipped" in again.stderr
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.md")} == stamps, "done inputs were not redone"

    narrowed = _run(tmp_path, str(inputs / "report.pdf"), "--out", str(out), "--pages", "2-3,7",
                    "--formats", "md,txt,json", "--text-layer", "never")
    assert narrowed.returncode == 0, narrowed.stderr
    assert "1 input(s): 1 done, 0 failed, 0 skipped" in narrowed.stderr
    text = (out / "report.txt").read_text()
    assert samples.page_sentence(1) in text and samples.page_sentence(2) in text
    assert samples.page_sentence(0) not in text and text.count("\f") == 1
    pages = json.loads((out / "report.json").read_text())["documents"][0]["pages"]
    assert {r["source"] for page in pages for r in page["regions"]} == {"ocr"}, "--text-layer never recognises"


def test_inputs_and_the_manifest(tmp_path, inputs):
    found = find_inputs([str(inputs), str(inputs / "report.pdf")])
    assert [item.key for item in found] == ["locked", "report", "sub/columns", "sub/scan", "report-2"]
    out = tmp_path / "out"
    manifest = RunManifest(out)
    item = found[1]
    sha = file_sha256(item.path)
    assert not manifest.is_done(item, out, sha, None, ("md",))
    out.mkdir()
    item.output_path(out, "md").write_text("# done")
    manifest.record(item, sha, None, ("md",))
    reloaded = RunManifest(out)
    assert reloaded.is_done(item, out, sha, None, ("md",))
    assert not reloaded.is_done(item, out, sha, "1", ("md",)), "other pages: redo"
    assert not reloaded.is_done(item, out, sha, None, ("md", "pdf")), "more formats: redo"
    assert not reloaded.is_done(item, out, "0" * 64, None, ("md",)), "changed file: redo"
    item.output_path(out, "md").unlink()
    assert not reloaded.is_done(item, out, sha, None, ("md",)), "output deleted: redo"


def test_arguments_that_cannot_work_exit_2(tmp_path):
    missing = _run(tmp_path, str(tmp_path / "nothing-here"), "--out", str(tmp_path / "out"))
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    bad_format = _run(tmp_path, str(tmp_path), "--out", str(tmp_path / "out"), "--formats", "docx")
    assert bad_format.returncode == 2 and "unknown format 'docx'" in bad_format.stderr
    bad_layer = _run(tmp_path, str(tmp_path), "--out", str(tmp_path / "out"), "--text-layer", "bogus")
    assert bad_layer.returncode == 2 and "argument --text-layer: invalid choice: 'bogus'" in bad_layer.stderr


def test_the_text_layer_choices_are_the_pipelines():
    import argparse

    from app.commands.run import TEXT_LAYER_MODES as offered
    from app.commands.run import configure
    from vision.text_layer import TEXT_LAYER_MODES

    assert offered == TEXT_LAYER_MODES == ("auto", "never", "verify")
    parser = argparse.ArgumentParser()
    configure(parser)
    assert parser.parse_args(["in.pdf", "--out", "out", "--text-layer", "verify"]).text_layer == "verify"
