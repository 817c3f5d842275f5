"""Coverage-guided fuzzing of the PDF/image intake (atheris), bounded, plus the replay of every
kept input on every run.

- `test_intake_fuzz_finds_nothing_new`: fuzz_intake.py in a subprocess for FUZZ_SECONDS
  (x OCRSERVE_ADVERSARIAL_SCALE), from corpus/seeds/. A crash, hang (-timeout) or memory
  blow-up (-rss_limit_mb) is copied into corpus/crashes/ (keep it: the replay below runs it
  from then on) and fails the test.
- `test_kept_inputs_replay`: every file of corpus/seeds/ and corpus/crashes/ through the
  same check (intake_check.py), in this process.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import report, scaled
from workers.job_service import Upload

from .intake_check import LIMITS, check_one

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SEEDS = HERE / "corpus" / "seeds"
CRASHES = HERE / "corpus" / "crashes"
FUZZ_SECONDS = scaled(25)
PER_INPUT_TIMEOUT_S = 10
RSS_LIMIT_MB = 3072


def test_intake_fuzz_finds_nothing_new(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    done = subprocess.run(
        [sys.executable, str(HERE / "fuzz_intake.py"), f"-max_total_time={FUZZ_SECONDS}",
         f"-timeout={PER_INPUT_TIMEOUT_S}", f"-rss_limit_mb={RSS_LIMIT_MB}", "-print_final_stats=1",
         f"-artifact_prefix={tmp_path}/", str(corpus), str(SEEDS)],
        cwd=tmp_path, capture_output=True, text=True, timeout=FUZZ_SECONDS + 300)
    output = done.stdout + done.stderr
    found = [p for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-"))]
    kept = []
    for artifact in found:
        target = CRASHES / artifact.name
        shutil.copy(artifact, target)
        kept.append(str(target.relative_to(HERE.parents[1])))
    assert not found, f"new intake defect(s), kept as {kept}:\n{output[-6000:]}"
    assert done.returncode == 0, output[-6000:]
    stats = dict(re.findall(r"stat::(\w+):\s+(\d+)", output))
    report("atheris intake fuzzing", seconds=FUZZ_SECONDS, executions=stats.get("number_of_executed_units"),
           exec_per_s=stats.get("average_exec_per_sec"), new_units=stats.get("new_units_added"),
           peak_rss_mb=stats.get("peak_rss_mb"))
    assert int(stats.get("number_of_executed_units", 0)) > 0


def kept_inputs() -> list[Path]:
    return sorted([*SEEDS.iterdir(), *CRASHES.iterdir()])


@pytest.mark.parametrize("path", kept_inputs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_kept_inputs_replay(path):
    check_one(path.read_bytes())


def test_pdf_with_an_invalid_page_count_is_a_documented_refusal():
    """The fuzzer's first finding: MuPDF raised ("code=7: Invalid number of pages") reading the
    page count, outside the check that turns its errors into CorruptDocumentError."""
    from vision.limits import CorruptDocumentError

    with pytest.raises(CorruptDocumentError, match="page tree"):
        Upload("upload.pdf", (CRASHES / "pdf-invalid-page-count.pdf").read_bytes()).open(LIMITS)


def test_a_page_tree_that_breaks_only_when_its_pages_load_is_a_documented_refusal():
    """Found once rendering errors stopped being swallowed (issue 33): a PDF that opens with two
    pages whose page tree is malformed; loading page 1 raised MuPDF's FzErrorFormat and page 2
    pymupdf's IndexError, neither a RuntimeError, so both escaped `render_page` undocumented."""
    from vision.limits import CorruptDocumentError

    with Upload("upload.pdf", (CRASHES / "pdf-malformed-page-tree-at-render.pdf").read_bytes()).open(LIMITS) as doc:
        assert doc.num_pages == 2
        for index, reason in ((0, "malformed page tree"), (1, "not in document")):
            with pytest.raises(CorruptDocumentError, match=reason):
                doc.render_page(index, dpi=20)


def test_a_package_whose_type_entry_will_not_inflate_is_a_documented_refusal():
    """Found the first time the fuzzer met office packages (issue 34): a DOCX whose
    [Content_Types].xml has a broken deflate stream raised zlib.error out of the package check."""
    from vision.limits import CorruptDocumentError

    with pytest.raises(CorruptDocumentError, match="damaged ZIP package"):
        Upload("upload.docx", (CRASHES / "docx-broken-deflate-stream.docx").read_bytes()).open(LIMITS)
