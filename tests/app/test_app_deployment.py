"""What deployment relies on: docker-compose services whose commands are real
`ocrserve` subcommands with arguments they accept, a Dockerfile that copies
every package, import boundaries (no torch in the API, no engine in workers),
and the console script knowing every subcommand."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from app.commands import SUBCOMMANDS, build_parser

REPO_ROOT = Path(__file__).resolve().parents[2]
_DEFAULTED = re.compile(r"\$\{[A-Z_]+:-([^}]*)\}")


def _compose() -> dict:
    return yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())


def _expanded(argv: list[str]) -> list[str]:
    """`${VAR:-default}` as compose expands it with VAR unset."""
    return [_DEFAULTED.sub(r"\1", arg) for arg in argv]


def test_compose_runs_postgres_redis_engine_worker_and_api_from_our_image():
    services = _compose()["services"]
    # engine-gpu replaces engine on a GPU machine, only under `--profile gpu` (test below)
    assert set(services) == {"postgres", "redis", "engine", "extraction", "worker", "api", "engine-gpu"}
    assert services["engine-gpu"]["profiles"] == ["gpu"]
    assert services["redis"]["image"].startswith("redis:")
    assert services["postgres"]["image"].startswith("postgres:")
    # secrets by environment, never on a command line (any local user reads argv)
    assert services["redis"]["environment"]["REDIS_PASSWORD"].startswith("${OCRSERVE_REDIS_PASSWORD:?")
    assert "requirepass %s" in services["redis"]["command"][-1] and "OCRSERVE_REDIS_PASSWORD" not in \
        " ".join(services["redis"]["command"])
    postgres = services["postgres"]
    assert postgres["environment"]["POSTGRES_USER"] == "postgres" and postgres["environment"]["OCRSERVE_DB_USER"] \
        == "ocrserve", "the app's role is not the superuser"
    assert postgres["environment"]["POSTGRES_PASSWORD"].startswith("${OCRSERVE_DB_ADMIN_PASSWORD:?")
    assert "./deploy/postgres-init.sh:/docker-entrypoint-initdb.d/10-ocrserve-role.sh:ro" in postgres["volumes"]
    for name, service in services.items():   # the superuser's password goes to the postgres service only
        assert name == "postgres" or "OCRSERVE_DB_ADMIN_PASSWORD" not in str(service), name
    for name in ("engine", "extraction", "worker", "api"):
        assert services[name]["build"] == "."
    volumes = set()
    for name in ("worker", "api"):
        environment = services[name]["environment"]
        assert environment["OCRSERVE_BROKER_URL"] == "redis://:${OCRSERVE_REDIS_PASSWORD}@redis:6379/0"
        assert environment["OCRSERVE_DATABASE_URL"].startswith("postgresql://ocrserve:${OCRSERVE_DB_PASSWORD}@postgres:")
        assert environment["OCRSERVE_BLOB_STORE"] == "database"
        assert environment["OCRSERVE_ENGINE_URL"] == "http://engine:30000/v1"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
        [volume] = services[name]["volumes"]
        volumes.add(volume.split(":")[0])
    assert len(volumes) == 2, "the api and the workers share no volume: only PostgreSQL and Redis"
    for name in ("postgres", "redis"):   # published on loopback unless a worker host must reach them
        assert all(port.startswith("${OCRSERVE_SHARED_BIND:-127.0.0.1}:") for port in services[name]["ports"])
    assert "ports" not in services["engine"], "the engine stays on the private network"
    assert "ports" not in services["extraction"], "the engine stays on the private network"


def test_a_worker_host_compose_file_joins_through_the_broker_and_database_alone():
    services = yaml.safe_load((REPO_ROOT / "docker-compose.worker-host.yml").read_text())["services"]
    assert set(services) == {"engine", "extraction", "worker"}
    environment = services["worker"]["environment"]
    assert environment["OCRSERVE_BROKER_URL"].startswith("${OCRSERVE_BROKER_URL:?")
    assert environment["OCRSERVE_DATABASE_URL"].startswith("${OCRSERVE_DATABASE_URL:?")
    assert environment["OCRSERVE_BLOB_STORE"] == "database"
    assert all("ports" not in service for service in services.values()), "a worker host serves nobody"
    from engine.server.cli_args import build_parser as engine_parser

    for name, service in services.items():
        subcommand, *argv = _expanded(service["command"])
        if subcommand == "engine":
            engine_parser().parse_args(argv)
        else:
            build_parser(subcommand).parse_args(argv)


def test_compose_commands_are_ocrserve_subcommands_with_valid_arguments():
    from engine.server.cli_args import build_parser as engine_parser

    for name, service in _compose()["services"].items():
        if name in ("redis", "postgres"):
            continue
        subcommand, *argv = _expanded(service["command"])
        if subcommand == "engine":
            args = engine_parser().parse_args(argv)
            expected = {"engine": "house-ocr", "extraction": "smollm2-135m", "engine-gpu": "/models/checkpoint"}
            assert args.model == expected[name], (name, args.model)
            if name == "engine-gpu":
                assert args.device == "cuda" and args.dtype == "bfloat16"
        else:
            assert subcommand in SUBCOMMANDS, subcommand
            build_parser(subcommand).parse_args(argv)   # exits (fails the test) on an unknown argument


def test_the_gpu_engine_takes_the_cpu_engines_place_on_the_network():
    gpu = _compose()["services"]["engine-gpu"]
    assert gpu["build"]["dockerfile"] == "Dockerfile.cuda" and (REPO_ROOT / "Dockerfile.cuda").is_file()
    assert gpu["networks"]["default"]["aliases"] == ["engine"]   # the workers' OCRSERVE_ENGINE_URL
    assert "ports" not in gpu, "the engine stays on the private network"
    assert gpu["environment"]["OCRSERVE_ENGINE_API_KEY"].startswith("${OCRSERVE_ENGINE_API_KEY:?")
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


def test_the_dockerfile_installs_every_package_and_runs_ocrserve():
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["ocrserve"]' in dockerfile
    packages = re.search(r'include = \[([^\]]*)\]', (REPO_ROOT / "pyproject.toml").read_text()).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        assert f"COPY {package}/ {package}/" in dockerfile, package
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in dockerfile
    from app.web_ui import VENDOR_DIRS   # the web page's libraries, from the npm stage

    for text in (dockerfile, (REPO_ROOT / "Dockerfile.cuda").read_text()):
        assert "COPY package.json package-lock.json ./" in text and "npm ci --omit=dev" in text
        for folder in VENDOR_DIRS:
            assert f"COPY --from=web-libraries /build/node_modules/{folder}/ node_modules/{folder}/" in text, folder
    cmd = re.search(r"^CMD (\[.*\])$", dockerfile, re.M).group(1)
    subcommand, *argv = yaml.safe_load(cmd)
    build_parser(subcommand).parse_args(argv)


def test_the_api_never_imports_torch_and_workers_never_import_the_engine(tmp_path):
    code = ("import sys\n"
            "import app.main, app.cli, app.commands.api, app.commands.serve, app.commands.run, app.commands.keys\n"
            "import app.commands.worker, app.local_services\n"
            "app.main.create_app()\n"
            "assert 'torch' not in sys.modules, 'app imported torch'\n"
            "import workers.tasks, workers.recognizers.registry\n"
            "leaked = sorted(m for m in sys.modules if m == 'torch' or m.split('.')[0] == 'engine')\n"
            "assert not leaked, leaked\n")
    env = {**os.environ, "OCRSERVE_DATA_DIR": str(tmp_path), "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("subcommand", sorted(SUBCOMMANDS))
def test_the_console_script_knows_the_subcommand(subcommand):
    """Needs the subcommands wired into app/cli.py (see app/commands/__init__.py)."""
    done = subprocess.run([sys.executable, "-m", "app.cli", subcommand, "--help"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"usage: ocrserve {subcommand}" in done.stdout
