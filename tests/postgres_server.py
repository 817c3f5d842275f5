"""A throw-away PostgreSQL cluster for tests: Debian's `postgresql` binaries
(scripts/setup.sh installs them), `initdb` into a fresh directory and one
`postgres` process on a free loopback port, run as an unprivileged user (the
server refuses to run as root: under root the cluster belongs to the `postgres`
or `nobody` account). Trust authentication on loopback, fsync off: nothing here
outlives the test session. `new_database()` gives each test an empty database.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid

START_TIMEOUT_S = 60
SUPERUSER = "ocrserve"


def _bindir() -> str:
    config = shutil.which("pg_config")
    if config:
        found = subprocess.run([config, "--bindir"], capture_output=True, text=True).stdout.strip()
        if found and os.path.exists(os.path.join(found, "initdb")):
            return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    assert candidates, "PostgreSQL is not installed (scripts/setup.sh installs Debian's postgresql)"
    return candidates[-1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self, listen: str = "127.0.0.1", trusted_networks: tuple[str, ...] = ()) -> None:
        """`listen`: the address(es) to accept connections on; `trusted_networks`: CIDR ranges
        besides loopback allowed in without a password (other hosts of a multi-host test)."""
        bindir = _bindir()
        self.port = _free_port()
        self.root = tempfile.mkdtemp(prefix="ocrserve-pg-")
        os.chmod(self.root, 0o700)
        run_as: dict = {}
        if os.geteuid() == 0:
            account = next((name for name in ("postgres", "nobody") if _has_user(name)), None)
            assert account, "no unprivileged account to run PostgreSQL as"
            entry = pwd.getpwnam(account)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            run_as = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        data = os.path.join(self.root, "data")
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                        "--no-sync", "--no-instructions"], check=True, capture_output=True, env=env, cwd=self.root,
                       **run_as)
        if trusted_networks:
            hba = os.path.join(data, "pg_hba.conf")
            with open(hba, "a") as conf:
                conf.writelines(f"host all all {network} trust\n" for network in trusted_networks)
        self.process = subprocess.Popen(
            [os.path.join(bindir, "postgres"), "-D", data, "-p", str(self.port), "-h", listen,
             "-k", self.root, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=300", "-c", "shared_buffers=64MB"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=self.root, **run_as)
        self.admin_url = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        deadline = time.monotonic() + START_TIMEOUT_S
        import psycopg

        while True:
            try:
                with psycopg.connect(self.admin_url, connect_timeout=2):
                    break
            except psycopg.OperationalError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("PostgreSQL did not start")
                time.sleep(0.2)

    def url(self, database: str, host: str = "127.0.0.1") -> str:
        return f"postgresql://{SUPERUSER}@{host}:{self.port}/{database}"

    def new_database(self, host: str = "127.0.0.1") -> str:
        """A URL (through `host`) to an empty database of its own."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name, host)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)   # fast shutdown
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
