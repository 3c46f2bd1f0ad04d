"""Whether the process that drives a run is still there. A driver that
dies without ending its run (SIGKILL, a head node restarted, ``ray job
stop`` past its grace) leaves it RUNNING in MLflow; so a driver tags its
run with where it runs (``plnlp.driver``: ``host:pid``) and, every
:data:`HEARTBEAT_S`, when it was last seen (``plnlp.driver_seen``). A run
whose driver is gone, known by its pid on the same host or else by a
heartbeat older than :data:`STALE_S`, is marked FAILED by the next command
of its experiment (:func:`end_abandoned_runs`), and ``--resume`` goes on
with it; one whose driver is alive is not resumed twice."""
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from components.recording.metric_delivery import spoken_duration
from components.recording.tags import (
    DRIVER_SEEN_TAG,
    DRIVER_TAG,
    FAILURE_TAG,
    PARENT_TAG,
    TUNE_STATE_TAG,
)
from plnlp_core.errors import PLNLPError

HEARTBEAT_S = 60.0
"""Seconds between two ``plnlp.driver_seen`` tags of a running driver."""
STALE_ENV = "PLNLP_DRIVER_STALE_S"
STALE_S = 900.0
"""Seconds without a heartbeat after which a driver on another host counts
as gone (``PLNLP_DRIVER_STALE_S`` sets it): well past a tracking server's
short outage, during which no heartbeat gets through."""


@contextmanager
def driver_heartbeat(run_id: str) -> Iterator[None]:
    """Tags ``run_id`` with this process as its driver, and seen now and
    every :data:`HEARTBEAT_S` while the block runs (a tag that does not get
    through is tried at the next beat)."""
    client = MlflowClient()
    client.set_tag(run_id, DRIVER_TAG, f"{socket.gethostname()}:{os.getpid()}")
    stop = threading.Event()

    def beat() -> None:
        while True:
            try:
                client.set_tag(run_id, DRIVER_SEEN_TAG, str(int(time.time())))
            except Exception:  # the tracking server away: the next beat tries again
                pass
            if stop.wait(HEARTBEAT_S):
                return

    beating = threading.Thread(target=beat, daemon=True, name="driver-heartbeat")
    beating.start()
    try:
        yield
    finally:
        stop.set()


def driver_gone(run: Run) -> str | None:
    """Why the driver of the RUNNING ``run`` is gone (``its driver, pid 12
    on host-a, last seen 20 min ago, is gone``), or ``None`` when it may
    still run, or the run is not RUNNING or predates these tags."""
    if run.info.status != "RUNNING" or DRIVER_TAG not in run.data.tags:
        return None
    host, pid = _driver(run)
    age = _since_seen(run)
    if (host == socket.gethostname() and not _alive(int(pid))) or age > stale_after_s():
        return f"its driver, pid {pid} on {host}, last seen {spoken_duration(age)} ago, is gone"
    return None


def refuse_a_driven_run(run: Run) -> None:
    """Refuses to go on with a RUNNING run whose driver may still run it."""
    if run.info.status != "RUNNING" or DRIVER_TAG not in run.data.tags or driver_gone(run):
        return
    host, pid = _driver(run)
    raise PLNLPError(
        f"run {run.info.run_id} is still running (its driver, pid {pid} on {host}, was seen "
        f"{spoken_duration(_since_seen(run))} ago); stop it first (Ctrl-C, or ray job stop), or, "
        f"if that machine is gone, go on once its driver has not been seen for "
        f"{spoken_duration(stale_after_s())} ({STALE_ENV} sets how long).")


def stale_after_s() -> float:
    """Seconds without a heartbeat after which a driver counts as gone."""
    return float(os.environ.get(STALE_ENV, STALE_S))


def _driver(run: Run) -> tuple[str, str]:
    """The host and pid of the run's driver (its ``plnlp.driver`` tag)."""
    host, _, pid = run.data.tags[DRIVER_TAG].rpartition(":")
    return host, pid


def _since_seen(run: Run) -> float:
    """Seconds since the run's driver was last seen (since it started, if never)."""
    return time.time() - float(run.data.tags.get(DRIVER_SEEN_TAG, run.info.start_time / 1000))


def end_abandoned_runs(experiment_id: str) -> list[str]:
    """Marks FAILED each RUNNING run of the experiment whose driver is gone
    (:func:`driver_gone`), and its RUNNING nested runs, with the reason and
    how to go on; returns one line for each."""
    client = MlflowClient()
    running = client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'")
    lines = []
    for run in running:
        gone = driver_gone(run)
        if gone is None:
            continue
        command = "tune.py" if TUNE_STATE_TAG in run.data.tags else "run.py"
        reason = f"{gone}; go on with: python pipelines/{command} --resume {run.info.run_id}"
        for each in [run, *(child for child in running
                            if child.data.tags.get(PARENT_TAG) == run.info.run_id)]:
            client.set_tag(each.info.run_id, FAILURE_TAG, reason)
            client.set_terminated(each.info.run_id, status="FAILED")
        lines.append(f"run {run.info.run_id} was left RUNNING: {reason}")
    return lines


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
