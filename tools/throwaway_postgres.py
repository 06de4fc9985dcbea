"""A throwaway PostgreSQL server: Debian's own binaries, a Unix socket, a temporary folder.

The gradebook tests (tests/grading/test_gradebook_server.py, through tests/support/postgres.py) and the
scale benchmark (benchmarks/grading_scale.py) grade into it.

``initdb`` refuses to run as root, so when run as root the cluster belongs to ``nobody`` (the
server runs as that user, in a folder it owns); otherwise it belongs to whoever runs it. It
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

#: the database role and database the tests and the benchmark use
USER, DATABASE = "grader", "gradebook"
MISSING = (
    "PostgreSQL's server programs (initdb, pg_ctl) are not installed: the gradebook tests start a real PostgreSQL "
    "server. On Debian: apt-get install postgresql (.ci/run installs it when it is missing)."
)


def server_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``pg_config --bindir``, else the newest ``/usr/lib/postgresql/*/bin``.

    Raises
    ------
    RuntimeError
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
    raise RuntimeError(MISSING)


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a PostgreSQL cluster in a temporary folder; yield the SQLAlchemy URL of its empty database ``gradebook``.

    Raises
    ------
    RuntimeError
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
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}\n{server_log}")

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


def copy_database(url: str, name: str) -> str:
    """Make database ``name`` on the server of ``url`` as a copy of ``url``'s database; return the copy's URL.

    ``CREATE DATABASE name TEMPLATE ...``: a gradebook set up once (students, assignment) is copied afresh
    for each run that grades into it. Nothing may be connected to the original meanwhile.

    Parameters
    ----------
    url : str
        A ``postgresql+psycopg://`` URL, as :func:`throwaway_server` yields.
    name : str
        The new database's name: lower-case letters, digits and underscores, starting with a letter.

    Returns
    -------
    str
        ``url`` with its database replaced by ``name``.

    Raises
    ------
    ValueError
        ``name`` is not such a name, or ``url`` is not a PostgreSQL URL.
    """
    import re

    import psycopg
    from sqlalchemy.engine import make_url

    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", name):
        raise ValueError(f"name must be lower-case letters, digits and underscores starting with a letter, not {name!r}")
    parsed = make_url(url)
    if not parsed.drivername.startswith("postgresql"):
        raise ValueError(f"url must be a PostgreSQL URL, not {url!r}")
    with psycopg.connect(host=parsed.query.get("host") or parsed.host, user=parsed.username, dbname="postgres", autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}" TEMPLATE "{parsed.database}"')
    return parsed.set(database=name).render_as_string(hide_password=False)
