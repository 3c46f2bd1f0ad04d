"""Subprocesses the tests and the benchmarks start: a command in its own
process group, a free port, the wait for a server to answer, the
environment of a process that starts its own Ray, and the training
processes of a Ray node, and a Ray head's job API."""
import contextlib
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from pipelines.runtime.ray_cluster import free_port

__all__ = ["all_ended", "descendants", "free_port", "jobs_answer", "pipeline_env",
           "process_group", "ray_jobs", "signal_the_tree", "submit_job", "training_processes",
           "wait_for_http"]

TRAINING_PROCESSES = ("ray::RayTrainWorker", "ray::TrainingActor")


@contextmanager
def process_group(argv: list[str], env: dict[str, str], cwd: Path, log: Path,
                  ) -> Iterator[subprocess.Popen]:
    """``argv`` in its own process group; whatever of the group, and of the
    processes it started (a local Ray's, in sessions of their own), is left
    at the end is killed, never another process."""
    with log.open("w") as out:
        process = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            yield process
        finally:
            signal_the_tree(process.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def descendants(pid: int) -> list[psutil.Process]:
    """The processes ``pid`` started, and theirs, still running."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def signal_the_tree(pid: int, signum: int) -> None:
    """Sends ``signum`` to ``pid`` and every process it started, at once, as
    systemd and Kubernetes signal a cgroup (a local Ray's processes run in
    sessions of their own, which a signal to the group misses)."""
    try:
        tree = [psutil.Process(pid), *descendants(pid)]
    except psutil.NoSuchProcess:
        tree = []
    for each in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            each.send_signal(signum)


def all_ended(processes: list[psutil.Process], within_s: float = 20) -> bool:
    """Whether every one of ``processes`` ends within ``within_s`` seconds."""
    _, alive = psutil.wait_procs(processes, timeout=within_s)
    return not alive


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
        time.sleep(0.25)
    raise AssertionError(f"{url} did not answer:\n{log.read_text()[-3000:]}")


def pipeline_env(tmp_path: Path, ray_address: str | None = None, **extra: str
                 ) -> dict[str, str]:
    """The test's environment for a subprocess that starts its own local
    Ray, or that joins the running Ray at ``ray_address`` as a user's
    command joins a cluster: ``RAY_ADDRESS`` set, ``RAY_AUTH_MODE`` unset
    (the command sends the token it finds in ``~/.ray/auth_token``, which
    the running Ray asks for). A command that joins skips a Ray's start,
    about 5 CPU-seconds of the machine's 2 cores (AMD EPYC: 13.7-14.5
    CPU-s a ddi smoke command against 18.3-19.2)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "MLFLOW_TRACKING_URI")}
    env.update(PLNLP_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1", **extra)
    if ray_address is not None:
        env["RAY_ADDRESS"] = ray_address
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


def ray_jobs(dashboard: str, token: str) -> object:
    """Ray's job SDK client of the head whose dashboard is at ``dashboard``,
    with the cluster's ``token``: what ``ray job status``, ``logs`` and
    ``list`` ask, from the test's own process (each such command costs
    about 2 CPU-seconds, which a test that polls takes from the job)."""
    from ray.job_submission import JobSubmissionClient

    return JobSubmissionClient(dashboard, headers={"Authorization": f"Bearer {token}"})


NO_AGENT_YET = "No available agent to submit job"
"""What a head refuses a job with before the agent that takes jobs is up (no job is made)."""


def submit_job(argv: list[str], env: dict[str, str], cwd: Path | None = None,
               timeout: float = 900) -> subprocess.CompletedProcess:
    """``ray job submit`` (``argv``) until the head takes the job: a head whose
    dashboard answers, and lists its jobs (:func:`jobs_answer`), may not yet
    have the agent that takes them, and refuses the job with
    :data:`NO_AGENT_YET` (test_tune's token-authenticated head met it once on
    a loaded 2-core machine), so a refused submission is sent again every
    2 s, 30 times at most."""
    for _ in range(30):
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)
        if NO_AGENT_YET not in done.stdout + done.stderr:
            return done
        time.sleep(2)
    return done


def jobs_answer(dashboard: str, token: str) -> bool:
    """Whether the head at ``dashboard`` lists its jobs yet (as ``ray job
    list`` exits 0 once it does)."""
    try:
        ray_jobs(dashboard, token).list_jobs()
    except Exception:  # not up yet: refused, or the head not ready to answer
        return False
    return True
