"""The import rules of docs/ARCHITECTURE.md, checked in fresh interpreters:
app -> workers -> {engine client over HTTP, vision}; engine -> kernels; never back. `httpguard`,
which both HTTP servers (app and engine.server) import, imports none of them."""
from __future__ import annotations

import subprocess
import sys

import pytest


def imported_after(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("module,forbidden", [
    ("engine.engine", {"vision", "workers", "app"}),
    ("engine.async_engine", {"vision", "workers", "app"}),
    ("engine.server.app", {"vision", "workers", "app"}),
    ("kernels.paged_attention", {"engine", "vision", "workers", "app"}),
    ("vision.page_analysis", {"engine", "torch", "workers", "app"}),
    ("app.cli", {"torch", "engine"}),
    ("app.main", {"torch", "engine"}),
    ("workers.tasks", {"torch", "engine", "app"}),
    ("httpguard.hosts", {"torch", "fastapi", "starlette", "engine", "kernels", "vision", "workers", "app"}),
])
def test_imports_flow_one_way(module, forbidden):
    loaded = {name.split(".")[0] for name in imported_after(module)}
    assert not (loaded & forbidden), f"{module} pulled in {sorted(loaded & forbidden)}"
