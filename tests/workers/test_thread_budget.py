"""The host's cores shared out between page processes; the engine's threads where set."""
from __future__ import annotations

import pytest

from workers import settings as settings_module
from workers.settings import Settings, host_cores


@pytest.mark.parametrize("cores, concurrency, page", [
    (2, 2, 1),     # this machine: one thread for each page process
    (2, 1, 2),
    (16, 2, 8),
    (16, 4, 4),
    (1, 3, 1),     # never none
])
def test_unset_page_threads_share_the_hosts_cores(monkeypatch, tmp_path, cores, concurrency, page):
    monkeypatch.setattr(settings_module, "host_cores", lambda: cores)
    settings = Settings(data_dir=tmp_path, worker_concurrency=concurrency)
    assert settings.page_threads == page
    assert settings.engine_num_threads is None, "the engine keeps torch's own choice"


def test_set_thread_counts_are_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(settings_module, "host_cores", lambda: 16)
    settings = Settings(data_dir=tmp_path, worker_concurrency=2, vision_num_threads=3, engine_num_threads=5)
    assert (settings.page_threads, settings.engine_num_threads) == (3, 5)


def test_the_environment_sets_them(monkeypatch, tmp_path):
    monkeypatch.setenv("OCRSERVE_VISION_NUM_THREADS", "2")
    monkeypatch.setenv("OCRSERVE_ENGINE_NUM_THREADS", "1")
    settings = Settings(data_dir=tmp_path)
    assert (settings.page_threads, settings.engine_num_threads) == (2, 1)
    monkeypatch.setenv("OCRSERVE_VISION_NUM_THREADS", "0")
    with pytest.raises(ValueError):
        Settings(data_dir=tmp_path)


def test_host_cores_are_this_process_share():
    assert 1 <= host_cores()
