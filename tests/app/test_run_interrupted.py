"""`ocrserve run` killed with SIGKILL part-way through a folder, then run again: the second run
finishes the folder, skips what the first one finished, and every input's outputs hold each of
its pages once. Recognition: Tesseract (fast; the house model's own run is in
test_house_images_e2e.py).

A second test: the worker (and engine) that `run` starts live in sessions of their own, so a
`run` killed with SIGKILL used to leave them running; now they end with it
(engine/server/parent_watch.py).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import ocr_samples as samples
from app.batch_inputs import RunManifest
from service_harness import REPO_ROOT, service_env, wait_for

pytestmark = pytest.mark.slow

NUM_INPUTS = 4
PAGES = 3
# Pages of each input in the resumed-run test: all inputs are submitted at once and read side by
# side, so inputs of one length finish together, and under load `run` could record all of them in
# one poll before the test saw the first; the short one finishes well before the long ones.
INPUT_PAGES = (1, PAGES, 3 * PAGES, 3 * PAGES)


def _env(tmp_path) -> dict[str, str]:
    env = service_env(tmp_path / "unused-data-dir")
    env.pop("OCRSERVE_DATA_DIR")
    return env


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def _kill_run_mid_folder(tmp_path, folder: Path, out: Path) -> list[int]:
    """Start `run`, SIGKILL it once its first input is written and before the last; returns the pids
    of the children it had started."""
    log = open(tmp_path / "first-run.log", "wb")   # noqa: SIM115
    first = subprocess.Popen([sys.executable, "-m", "app.commands.run", str(folder), "--out", str(out), "--quiet",
                              "--text-layer", "never", "--formats", "json,txt"],
                             env=_env(tmp_path), cwd=REPO_ROOT, stdout=log, stderr=log)
    children: set[int] = set()

    def first_input_written() -> bool:
        children.update(_children(first.pid))
        assert first.poll() is None, (tmp_path / "first-run.log").read_text()
        return len(RunManifest(out).entries) >= 1     # the first input recorded as done

    try:
        wait_for(first_input_written, 300, interval_s=0.05, what="the first input")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        log.close()
    return sorted(children)


def test_a_killed_run_is_resumed_and_finishes_the_folder(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i, pages in enumerate(INPUT_PAGES):
        (folder / f"doc{i}.pdf").write_bytes(samples.multi_page_pdf(pages))
    out = tmp_path / "out"
    children = _kill_run_mid_folder(tmp_path, folder, out)
    try:
        done_first = len(RunManifest(out).entries)
        assert 1 <= done_first < NUM_INPUTS, "the run was not killed part-way"

        again = subprocess.run([sys.executable, "-m", "app.commands.run", str(folder), "--out", str(out), "--quiet",
                                "--text-layer", "never", "--formats", "json,txt"],
                               env=_env(tmp_path), cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr
        # What the first run recorded as done is skipped; the rest (even if written, unrecorded) is redone.
        summary = re.search(r"(\d+) input\(s\): (\d+) done, (\d+) failed, (\d+) skipped", again.stderr)
        assert summary, again.stderr
        total, done, failed, skipped = map(int, summary.groups())
        assert (total, failed, done, skipped) == (NUM_INPUTS, 0, NUM_INPUTS - done_first, done_first), again.stderr
        for i, num_pages in enumerate(INPUT_PAGES):
            pages = json.loads((out / f"doc{i}.json").read_text())["documents"][0]["pages"]
            assert [p["page"] for p in pages] == list(range(1, num_pages + 1))
            text = (out / f"doc{i}.txt").read_text()
            assert [text.count(samples.page_sentence(n)) for n in range(num_pages)] == [1] * num_pages, text
    finally:
        for pid in children:    # whatever the killed run left behind (nothing, since the parent-death watch; see below)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_a_killed_run_leaves_no_process_behind(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i in range(2):
        (folder / f"doc{i}.pdf").write_bytes(samples.multi_page_pdf(PAGES))
    children = _kill_run_mid_folder(tmp_path, folder, tmp_path / "out")
    assert children, "run started no child"
    try:
        wait_for(lambda: not any(_alive(pid) for pid in children), 120, what="the killed run's children to exit")
    finally:
        for pid in children:
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
