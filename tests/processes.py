"""Subprocesses the tests start: a command in its own process group, a
free port, and the environment of a process that starts its own Ray."""
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def process_group(argv: list[str], env: dict[str, str], cwd: Path, log: Path,
                  ) -> Iterator[subprocess.Popen]:
    """``argv`` in its own process group (its Ray too); whatever of the group
    is left at the end is killed, never another process."""
    with log.open("w") as out:
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            yield process
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def pipeline_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test's environment for a subprocess that starts its own local Ray."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "MLFLOW_TRACKING_URI")}
    env.update(PLNLP_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1", **extra)
    return env
