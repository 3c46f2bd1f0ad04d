"""Subprocesses the tests start: a command in its own process group, a
free port, and the environment of a process that starts its own Ray."""
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil

from pipelines.runtime.ray_cluster import free_port

__all__ = ["TrackingServer", "free_port", "pipeline_env", "process_group",
           "training_processes", "wait_for_http"]

TRAINING_PROCESSES = ("ray::RayTrainWorker", "ray::TrainingActor")


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


def wait_for_http(url: str, log: Path, timeout: float, any_status: bool = False) -> None:
    """Waits until ``url`` answers with success (or, with ``any_status``,
    with any HTTP status, as a server behind token auth answers 401);
    fails with the end of the server's ``log`` if it never does."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            if any_status:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):  # not yet, or slow
            pass
        time.sleep(1)
    raise AssertionError(f"{url} did not answer:\n{log.read_text()[-3000:]}")


def pipeline_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The test's environment for a subprocess that starts its own local Ray."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "MLFLOW_TRACKING_URI")}
    env.update(PLNLP_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1", **extra)
    return env


def training_processes(node: object) -> list[psutil.Process]:
    """The Ray Train workers and training actors the raylet of Ray's
    ``node`` started, never another Ray's on the same machine."""
    from ray._private import ray_constants

    raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
    found = []
    for process in psutil.Process(raylet).children(recursive=True):
        try:
            if " ".join(process.cmdline()).startswith(TRAINING_PROCESSES):
                found.append(process)
        except psutil.NoSuchProcess:
            continue
    return found


class TrackingServer:
    """``mlflow server`` on a free port, its runs in ``folder``'s SQLite
    file: the same server each time it is started."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        folder.mkdir()
        self.started: list[ExitStack] = []

    def start(self) -> None:
        argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                f"sqlite:///{self.folder / 'mlflow.db'}", "--artifacts-destination",
                str(self.folder / "artifacts"), "--host", "127.0.0.1", "--port", str(self.port),
                "--workers", "1"]
        log = self.folder / f"server-{len(self.started)}.log"
        running = ExitStack()
        running.enter_context(process_group(argv, pipeline_env(self.folder), self.folder, log))
        self.started.append(running)
        wait_for_http(f"{self.uri}/health", log, timeout=120)

    def stop(self) -> None:
        """Kills it, as a crashed pod or a failover ends it."""
        self.started[-1].close()

    def __enter__(self) -> "TrackingServer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        for running in self.started:
            running.close()
