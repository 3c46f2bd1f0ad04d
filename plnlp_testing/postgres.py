"""A PostgreSQL server for the tests: Debian's ``postgresql`` package's
binaries (``.ci/run`` installs it), its data folder in a temp dir, on a free
port of 127.0.0.1, with a password-protected database for MLflow, as a
team's tracking server uses one."""
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from plnlp_testing.processes import free_port, process_group

USER, PASSWORD, DATABASE = "mlflow", "plnlp-db-password", "mlflow"


def postgres_bin() -> Path:
    """The folder of ``initdb`` and ``postgres``: on PATH, or where Debian's
    package puts them (``/usr/lib/postgresql/<version>/bin``)."""
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    assert found, "PostgreSQL is not installed: apt-get install postgresql (as .ci/run does)"
    return found[-1].parent


@contextmanager
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server for the block; yields its database's URI
    (``postgresql://mlflow:…@127.0.0.1:<port>/mlflow``). Its folder is a
    short one of its own under /tmp (a socket's path is short, and as root
    the server runs as ``postgres``, which must reach it: PostgreSQL refuses
    to run as root), removed at the end."""
    binaries, port = postgres_bin(), free_port()
    folder = Path(tempfile.mkdtemp(prefix="plnlp-pg-", dir="/tmp"))
    (folder / "password").write_text(PASSWORD)
    as_user = {"user": "postgres"} if os.geteuid() == 0 else {}
    for path in (folder, folder / "password") if as_user else ():
        shutil.chown(path, "postgres")
    try:
        initdb = subprocess.run(
            [binaries / "initdb", "-D", folder / "data", "-U", USER, "--pwfile",
             folder / "password", "--auth-host=scram-sha-256", "--auth-local=trust"],
            capture_output=True, text=True, timeout=120, **as_user)
        assert initdb.returncode == 0, initdb.stderr[-3000:]
        argv = [str(binaries / "postgres"), "-D", str(folder / "data"), "-p", str(port),
                "-k", str(folder), "-c", "listen_addresses=127.0.0.1"]
        log = folder / "postgres.log"
        with process_group(["runuser", "-u", "postgres", "--", *argv] if as_user else argv,
                           dict(os.environ), folder, log):
            _create_database(binaries, folder, port, log)
            yield f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _create_database(binaries: Path, sockets: Path, port: int, log: Path) -> None:
    """Creates the database once the server takes connections (until then
    ``pg_isready`` says it does not)."""
    deadline = time.monotonic() + 90
    while subprocess.run([binaries / "pg_isready", "-h", "127.0.0.1", "-p", str(port)],
                         capture_output=True, timeout=30).returncode != 0:
        assert time.monotonic() < deadline, f"PostgreSQL did not start:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)
    subprocess.run([binaries / "createdb", "-h", str(sockets), "-p", str(port), "-U", USER,
                    DATABASE], check=True, capture_output=True, timeout=60)


def database_holds(uri: str, text: str) -> bool:
    """Whether any row of the database at ``uri`` holds ``text`` (a dump of
    it, searched)."""
    dump = subprocess.run([postgres_bin() / "pg_dump", "--data-only", uri],
                          capture_output=True, check=True, timeout=120)
    return text.encode() in dump.stdout
