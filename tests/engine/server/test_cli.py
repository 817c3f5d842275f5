"""The `ocrserve` console script: version, lazy dispatch to `ocrserve engine`, argument errors."""
from __future__ import annotations

import subprocess
import sys

from .conftest import REPO_ROOT


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_python(f"import sys; from app.cli import main; sys.exit(main({list(args)!r}))")


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "ocrserve 0.1.0"


def test_importing_app_and_its_cli_does_not_import_torch():
    result = run_python("import sys, app, app.cli; print('torch' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_engine_help_is_reached_through_ocrserve_without_loading_torch():
    result = run_python("import sys\nfrom app.cli import main\n"
                        "try:\n    main(['engine', '--help'])\nexcept SystemExit as exc:\n"
                        "    print('EXIT', exc.code, 'torch' in sys.modules)")
    assert "--kv-tokens" in result.stdout and "--api-key" in result.stdout
    assert result.stdout.strip().endswith("EXIT 0 False")


def test_engine_refuses_both_kv_budgets():
    result = run_cli("engine", "--model", "smollm2-135m", "--kv-tokens", "4096", "--kv-memory", "1GiB")
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr


def test_engine_refuses_a_malformed_byte_size():
    result = run_cli("engine", "--model", "smollm2-135m", "--kv-memory", "lots")
    assert result.returncode == 2
    assert "not a byte size" in result.stderr


def test_unknown_command_is_an_error():
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert "unknown command 'frobnicate'" in result.stderr


def test_byte_sizes_parse():
    from engine.server.cli_args import parse_bytes

    assert parse_bytes("1048576") == 2**20
    assert parse_bytes("2GiB") == 2 * 2**30
    assert parse_bytes("1.5GB") == 1_500_000_000
    assert parse_bytes("512 MiB") == 512 * 2**20
