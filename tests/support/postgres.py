"""A throwaway PostgreSQL server for the gradebook tests: Debian's own binaries, a Unix socket, a temporary folder.

``initdb`` refuses to run as root, so when the tests run as root the cluster belongs to ``nobody`` (the
server runs as that user, in a folder it owns); otherwise it belongs to whoever runs the tests. It
listens on no TCP port: only on a socket in its folder. Nothing is mocked.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: the database role and database the tests use
USER, DATABASE = "grader", "gradebook"
MISSING = (
    "PostgreSQL's server programs (initdb, pg_ctl) are not installed: the gradebook tests start a real PostgreSQL "
    "server. On Debian: apt-get install postgresql (.ci/run installs it when it is missing)."
)


def server_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, else the newest ``/usr/lib/postgresql/*/bin``.

    Raises
    ------
    AssertionError
        PostgreSQL's server programs are not installed (the message says how to install them).
    """
    candidates = []
    if shutil.which("pg_config"):
        done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip():
            candidates.append(Path(done.stdout.strip()))

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in path.parent.name.split(".") if p.isdigit())

    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise AssertionError(MISSING)


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a PostgreSQL cluster in a temporary folder; yield the SQLAlchemy URL of its empty database ``gradebook``.

    Raises
    ------
    AssertionError
        PostgreSQL is not installed, or the server does not start (with its log).
    """
    bindir = server_bindir()
    folder = Path(tempfile.mkdtemp(prefix="gradebook-pg-", dir="/tmp"))  # short: a socket path has at most 107 bytes
    prefix: list[str] = []
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
        prefix = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", "--"]
    env = {**os.environ, "LC_ALL": "C", "HOME": str(folder)}
    data, log = folder / "data", folder / "server.log"

    def run(*command: str) -> None:
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env, cwd=folder, timeout=120)
        server_log = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}\n{server_log}"

    started = False
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
        options = f"-k {folder} -c listen_addresses='' -F"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        started = True
        run(str(bindir / "createdb"), "-h", str(folder), "-U", USER, DATABASE)
        yield f"postgresql+psycopg://{USER}@/{DATABASE}?host={folder}"
    finally:
        if started:
            subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, env=env, cwd=folder, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
