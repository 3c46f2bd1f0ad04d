"""A Ray that dies under a running command: its run ends FAILED with one
sentence instead of a hang.

When Ray's GCS goes (its process killed, a lost head node), every Ray call
of the driver that needs it blocks, and Ray's core worker ends the driver
60 s later without running any of its code: the MLflow run would stay
RUNNING. :func:`ray_watched` asks the GCS every :data:`WATCH_S` whether it
answers; once a local Ray's has refused the connection for
:data:`LOCAL_GONE_S` (its process is gone, and nothing brings it back), or
any GCS has not answered for :data:`CLUSTER_GONE_S` (a cluster's, which a
fault-tolerant GCS may bring back within Ray's own 60 s; a local one too
busy to answer within a second, as on 2 cores running three trainings,
which a 2 s patience once failed while it ran on), the run and its runs
still RUNNING are marked FAILED, the sentence is printed and the process
ends (exit status 1). Its checkpoints are kept, so ``--resume`` goes on
from them."""
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import ray

from components.recording.reads import child_runs
from components.recording.run_lifecycle import end_other_run
from components.recording.tags import FAILURE_TAG
from pipelines.runtime.ray_cluster import GCS_ANSWERS, GCS_REFUSES, LOCAL_RAY, gcs_state
from plnlp_core.errors import first_line

WATCH_S = 1.0
LOCAL_GONE_S = 2.0
CLUSTER_GONE_S = 45.0


@contextmanager
def ray_watched(run_id: str, interrupted: Callable[[], bool]) -> Iterator[None]:
    """While the block runs, a Ray whose GCS stops answering ends the run
    ``run_id`` FAILED and the process (see the module), unless
    ``interrupted()``: an interrupt's own clean-up then ends it."""
    if not ray.is_initialized():
        yield
        return
    address = ray.get_runtime_context().gcs_address
    local = os.environ.get("RAY_ADDRESS", "").strip() in LOCAL_RAY
    done = threading.Event()

    def watch() -> None:
        answered = not_refused = time.monotonic()
        while not done.wait(WATCH_S):
            state, now = gcs_state(address), time.monotonic()
            answered = now if state == GCS_ANSWERS else answered
            not_refused = now if state != GCS_REFUSES else not_refused
            gone = now - answered >= CLUSTER_GONE_S or \
                (local and now - not_refused >= LOCAL_GONE_S)
            if gone and not interrupted() and not done.is_set():
                fail_for_a_lost_ray(run_id, ray_gone_reason(address, local, run_id))

    threading.Thread(target=watch, daemon=True, name="ray-watch").start()
    try:
        yield
    finally:
        done.set()


def ray_gone_reason(address: str, local: bool, run_id: str) -> str:
    """The run's ``failure_reason`` when Ray's GCS at ``address`` is gone."""
    which = "the local Ray's GCS" if local else f"the Ray cluster's GCS at {address}"
    return (f"{which} stopped answering during the run (Ray ended under the driver); its "
            f"complete checkpoints are kept: go on with python pipelines/run.py --resume "
            f"{run_id}")


def fail_for_a_lost_ray(run_id: str, reason: str) -> None:
    """Marks ``run_id`` and its runs still RUNNING FAILED with ``reason``,
    prints it and ends the process (exit status 1): no Ray call returns now."""
    try:
        for child in child_runs(run_id):
            if child.info.status == "RUNNING":
                end_other_run(child.info.run_id, "FAILED", {FAILURE_TAG: reason})
        end_other_run(run_id, "FAILED", {FAILURE_TAG: reason})
    except Exception as error:  # the tracking store is away too
        reason += f" (and its MLflow run could not be marked FAILED: {first_line(error)})"
    print(f"error: {reason}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)
