"""A throwaway PostgreSQL server for the tests: a real cluster in a temporary folder, never a mock.

`start_postgres()` runs the installed server's `initdb` and `pg_ctl` (as the `postgres` user via
`runuser` when the tests run as root, as CI does; as the current user otherwise) on a free
loopback port, with password logins over TCP: the superuser `postgres` and the role `imad`
(whose password holds URL metacharacters, so the tests exercise percent-encoding and
redaction). `missing_reason()` names what is absent (the binaries, runuser, the postgres user,
psycopg) so the tests that need the server skip saying why, on a machine without it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

SUPERUSER_PASSWORD = "super-secret-pw"
ROLE, ROLE_PASSWORD = "imad", "p@ss:w/rd?#1"
"""The tests' role: its password needs percent-encoding in a URL (@ : / ? #)."""


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian's layout), or one on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
                   key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0)
    if found:
        return found[-1].parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


def missing_reason() -> str | None:
    """Why a PostgreSQL server cannot be started here, or None when it can."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg and psycopg-pool are not installed (pip install 'imad[postgres]')"
    folder = server_binaries()
    if folder is None or not (folder / "initdb").exists():
        return "PostgreSQL's server binaries (initdb, pg_ctl) are not installed"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "runuser is missing (needed to run PostgreSQL as a non-root user)"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "there is no postgres user to run PostgreSQL as"
    return None


@dataclass
class PostgresServer:
    """A running cluster: its folder, port, and how to reach it."""

    folder: Path
    port: int
    binaries: Path
    _databases: int = 0

    def url(self, database: str = "postgres", user: str = ROLE, password: str | None = None) -> str:
        secret = ROLE_PASSWORD if password is None and user == ROLE else (
            SUPERUSER_PASSWORD if password is None else password)
        return (f"postgresql://{quote(user, safe='')}:{quote(secret, safe='')}@127.0.0.1:"
                f"{self.port}/{database}")

    def admin(self, sql: str, database: str = "postgres") -> list[tuple]:
        """Run SQL as the superuser (autocommit); the rows it returns."""
        import psycopg

        with psycopg.connect(self.url(database, "postgres"), autocommit=True) as connection:
            cursor = connection.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def fresh_database(self, owner: str = ROLE) -> str:
        """A new, empty database owned by `owner`; its name."""
        self._databases += 1
        name = f"imad_test_{self._databases}"
        self.admin(f"CREATE DATABASE {name} OWNER {owner}")
        return name

    def stop(self) -> None:
        _run([str(self.binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast",
                    "-w", "stop"])

    def start(self) -> None:
        options = (f"-k {self.folder} -p {self.port} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c max_connections=200")
        _run([str(self.binaries / "pg_ctl"), "-D", str(self.folder / "data"), "-l",
                    str(self.folder / "server.log"), "-o", options, "-w", "start"])


def _run(command: list[str]) -> None:
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stdout}{result.stderr}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """Start a cluster in a temporary folder; stop it and remove the folder at the end."""
    binaries = server_binaries()
    assert binaries is not None
    folder = Path(tempfile.mkdtemp(prefix="imad-postgres-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    password_file = folder / "pw"
    password_file.write_text(SUPERUSER_PASSWORD + "\n")
    if os.geteuid() == 0:
        os.chown(password_file, owner.pw_uid, owner.pw_gid)
    server = PostgresServer(folder, _free_port(), binaries)
    _run([str(binaries / "initdb"), "-D", str(folder / "data"), "-U", "postgres",
                  "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={password_file}",
                  "-E", "UTF8", "--no-sync"])
    server.start()
    try:
        escaped = ROLE_PASSWORD.replace("'", "''")
        server.admin(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{escaped}'")
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)
