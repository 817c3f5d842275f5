"""Hostile office, HTML and EPUB documents through the real converters (vision/office.py): links
that would make the server fetch a URL or embed one of its own files, a macro bound to the
document's opening, a converter that runs too long or writes too much. Each is converted with
nothing fetched and no host file in the PDF, or refused with a clear error and nothing left
running. The listener's record is the evidence; for the linked ODT a control run of LibreOffice
as Debian installs it (no sandbox, its default profile) shows the same document does fetch the
URL and embed the file, so the check can see a leak.

The package checks (ZIP bombs, too many files, damaged packages) are tested in
tests/vision/test_office.py and through the API in tests/app/test_api_office_documents.py; the
intake fuzzer (test_intake_fuzz.py) mutates packages from corpus/seeds/.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageDraw

from vision.formats import DocumentKind, sniff_kind
from vision.limits import ConversionFailedError, VisionLimits
from vision.office import convert_to_pdf

from . import hostile_documents as hostile
from .conftest import report

pytestmark = pytest.mark.slow
LIMITS = VisionLimits()


@pytest.fixture
def listener():
    server = hostile.RecordingListener()
    yield server
    server.close()


@pytest.fixture
def host_file(tmp_path) -> Path:
    """A picture on this host that no document may pull into its PDF."""
    path = tmp_path / "host-secret.png"
    image = Image.new("RGB", (600, 100), "white")
    ImageDraw.Draw(image).text((10, 40), "HOST SECRET", fill="black")
    image.save(path)
    return path


def _pdf_facts(pdf: Path) -> tuple[str, int]:
    with pymupdf.open(pdf) as document:
        return " ".join(page.get_text() for page in document), sum(len(page.get_images()) for page in document)


def _converted(path: Path, work: Path, limits: VisionLimits = LIMITS) -> Path:
    work.mkdir(exist_ok=True)
    kind = sniff_kind(path.read_bytes()[:1024], path.name, source=path, limits=limits)
    return convert_to_pdf(path, kind, work, limits)


def test_linked_pictures_in_an_odt_fetch_nothing_and_embed_no_host_file(tmp_path, listener, host_file):
    document = hostile.linked_odt(tmp_path / "linked.odt", listener.url, host_file)
    text, num_images = _pdf_facts(_converted(document, tmp_path / "work"))
    assert hostile.VISIBLE in " ".join(text.split())
    assert listener.hits == [] and num_images == 0, (listener.hits, num_images)

    # Control: LibreOffice unsandboxed, with its default settings, follows both links.
    profile = tmp_path / "default-profile"
    subprocess.run(["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
                    "--convert-to", "pdf", "--outdir", str(tmp_path / "control"), str(document)],
                   check=True, capture_output=True, timeout=180)
    _, control_images = _pdf_facts(tmp_path / "control" / "linked.pdf")
    assert listener.hits and control_images == 1, (listener.hits, control_images)
    report("office linked pictures", sandboxed_fetches=0, sandboxed_images=0,
           unsandboxed_fetches=len(listener.hits), unsandboxed_host_files_embedded=control_images)


@pytest.mark.parametrize("kind", ["html", "epub"])
def test_linked_pictures_in_html_and_epub_fetch_nothing_and_embed_no_host_file(kind, tmp_path, listener, host_file):
    if kind == "html":
        document = tmp_path / "linked.html"   # beside the host file: a relative link would find it
        document.write_text(hostile.linked_html(listener.url, host_file))
    else:
        document = hostile.linked_epub(tmp_path / "linked.epub", listener.url, host_file)
    text, num_images = _pdf_facts(_converted(document, tmp_path / "work"))
    assert hostile.VISIBLE in " ".join(text.split())
    assert listener.hits == [] and num_images == 0, (listener.hits, num_images)


def test_a_macro_bound_to_opening_does_not_run(tmp_path):
    # A regression guard: LibreOffice 7.4's --convert-to did not run this macro even with its
    # security at "low" by hand, so this passes on the profile's settings alone only if that changes.
    text, _ = _pdf_facts(_converted(hostile.macro_odt(tmp_path / "macro.odt"), tmp_path / "work"))
    assert hostile.VISIBLE in " ".join(text.split()) and hostile.MACRO_WORD not in text


def _processes_mentioning(marker: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if pid.isdigit() and marker in cmdline:
            found.append(cmdline[:200])
    return found


@pytest.mark.parametrize("kind", ["odt", "html"])
def test_a_conversion_past_its_time_budget_is_stopped_whole(kind, tmp_path):
    if kind == "odt":
        document = hostile.linked_odt(tmp_path / "slow.odt", "http://127.0.0.1:9", tmp_path / "none.png")
    else:
        document = tmp_path / "slow.html"
        document.write_text("<html><body>" + "<p>line</p>" * 1000 + "</body></html>")
    work = tmp_path / "work"
    with pytest.raises(ConversionFailedError, match="took longer than 0.3 s; it was stopped"):
        _converted(document, work, VisionLimits(conversion_timeout_s=0.3))
    assert _processes_mentioning(str(work)) == [], "a converter outlived its budget"
    assert list(work.iterdir()) == [], "the conversion left files behind"


def test_a_pdf_past_the_output_cap_is_refused(tmp_path):
    document = tmp_path / "long.html"
    document.write_text("<html><body>" + "<p>A line of text that fills the page.</p>" * 3000 + "</body></html>")
    with pytest.raises(ConversionFailedError, match="could not be converted"):
        _converted(document, tmp_path / "work", VisionLimits(max_converted_bytes=20_000))
    assert sniff_kind(document.read_bytes()) is DocumentKind.HTML
