"""The real `ocrmypdf` (from the package index) with `--plugin ocrmypdf_ocrserve` on a
scan-like page PDF: its output is a PDF that pikepdf finds sound, and its text layer,
read back by PyMuPDF, says what the page says, each word invisible and on the line
where it is printed. Both ways OCRmyPDF takes an engine's text: the default renderer
(our OcrElement tree) with the engine the plugin starts for the run, and
`--pdf-renderer sandwich` (our text-only page PDF) on an engine already running.
Bad plugin options are refused before any page is read, with their reasons."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import img2pdf
import numpy as np
import pikepdf
import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFilter, ImageFont

DPI = 200
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"   # Debian fonts-dejavu-core (setup.sh)
LINES = [
    "Quarterly inspection of the river pumps",
    "The north station was serviced on 14 March 2025.",
    "Two valves were replaced and the filters cleaned.",
    "Next visit: early September, weather permitting.",
]
TOP_PX, STEP_PX, LEFT_PX, SIZE_PX = 260, 90, 170, 44
RECALL = 0.9


def _scan_pdf(folder: Path) -> Path:
    """An A4 page at 200 DPI, typeset, blurred and noised a little, as a one-page image PDF."""
    image = Image.new("L", (1654, 2339), 246)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, SIZE_PX)
    for i, line in enumerate(LINES):
        draw.text((LEFT_PX, TOP_PX + i * STEP_PX), line, fill=25, font=font)
    image = image.filter(ImageFilter.GaussianBlur(0.8))
    noise = np.random.default_rng(7).normal(0, 9, (image.height, image.width))
    image = Image.fromarray(np.clip(np.asarray(image, dtype=float) + noise, 0, 255).astype(np.uint8))
    jpeg = folder / "page.jpg"
    image.save(jpeg, quality=85, dpi=(DPI, DPI))
    pdf = folder / "scan.pdf"
    pdf.write_bytes(img2pdf.convert(str(jpeg)))
    return pdf


def _ocrmypdf(*args: str, cwd: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("OCRSERVE_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ocrmypdf", "--plugin", "ocrmypdf_ocrserve", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _check_text_layer(pdf: Path) -> None:
    with pikepdf.open(pdf) as document:   # a PDF library that is not the one we wrote it with
        assert len(document.pages) == 1
        problems = document.check_pdf_syntax()
        assert not problems, problems
    with pymupdf.open(pdf) as document:
        page = document[0]
        found = page.get_text().split()
        expected = " ".join(LINES).split()
        recall = sum(min(found.count(w), expected.count(w)) for w in set(expected)) / len(expected)
        assert recall >= RECALL, (recall, found)
        # the text is OCRmyPDF's invisible layer (render mode 3), not ink
        assert page.get_texttrace() and all(span["type"] == 3 for span in page.get_texttrace())
        # each line's words sit on the printed line: the hit's middle within the line's height
        for i, line in enumerate(LINES):
            word = max(line.split(), key=len)
            hits = page.search_for(word)
            top = (TOP_PX + i * STEP_PX) * 72 / DPI
            assert any(top - 6 < (hit.y0 + hit.y1) / 2 < top + SIZE_PX * 72 / DPI + 6 for hit in hits), (word, hits)


@pytest.mark.slow
def test_ocrmypdf_with_the_plugin_makes_a_searchable_pdf_of_a_scan(tmp_path):
    source = _scan_pdf(tmp_path)
    out = tmp_path / "out.pdf"
    done = _ocrmypdf("-l", "eng", str(source), str(out), "--sidecar", str(tmp_path / "out.txt"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _check_text_layer(out)
    sidecar = (tmp_path / "out.txt").read_text()
    assert "14 March 2025" in sidecar, sidecar


@pytest.mark.slow
def test_sandwich_renderer_on_an_engine_already_running(tmp_path):
    from app.local_services import child_env, start_engine, with_engine_keys
    from workers.settings import Settings

    settings = with_engine_keys(Settings(data_dir=tmp_path / "data"))
    engine, url = start_engine(settings, child_env(settings), 0, tmp_path / "engine.log",
                               api_key=settings.engine_api_key)
    try:
        source = _scan_pdf(tmp_path)
        out = tmp_path / "out.pdf"
        done = _ocrmypdf("-l", "eng", "--pdf-renderer", "sandwich", "--ocrserve-engine-url", url,
                         str(source), str(out), cwd=tmp_path,
                         env_extra={"OCRSERVE_ENGINE_API_KEY": settings.engine_api_key or ""})
        assert done.returncode == 0, done.stderr
        _check_text_layer(out)
        # without the engine's key the plugin stops before any page, saying why
        refused = _ocrmypdf("--ocrserve-engine-url", url, str(source), str(tmp_path / "no.pdf"), cwd=tmp_path)
        assert refused.returncode != 0 and "401" in refused.stderr, refused.stderr
        assert not (tmp_path / "no.pdf").exists()
    finally:
        engine.stop()


@pytest.mark.parametrize(("args", "reason"), [
    (["--ocrserve-engine-url", "ftp://127.0.0.1/v1"], "expected an http:// or https:// URL with a host"),
    (["--ocrserve-engine-url", "http://user:secret@127.0.0.1:8001/v1"], "must not carry credentials"),
    (["--ocrserve-threads", "0"], "--ocrserve-threads 0: expected a whole number from 1 to 64"),
])
def test_bad_plugin_options_are_refused_with_their_reason(tmp_path, args, reason):
    source = _scan_pdf(tmp_path)
    done = _ocrmypdf(*args, str(source), str(tmp_path / "out.pdf"), cwd=tmp_path)
    assert done.returncode == 1, done.stderr   # OCRmyPDF's exit code for bad arguments
    assert reason in done.stderr, done.stderr
    assert not (tmp_path / "out.pdf").exists()


def test_bad_ocrserve_settings_are_refused_with_their_reason(tmp_path):
    source = _scan_pdf(tmp_path)
    done = _ocrmypdf(str(source), str(tmp_path / "out.pdf"), cwd=tmp_path,
                     env_extra={"OCRSERVE_RECOGNIZER": "nonesuch"})
    assert done.returncode == 1, done.stderr
    assert "OCRSERVE_RECOGNIZER" in done.stderr, done.stderr
