"""The interrupt's watch on Ray (pipelines/runtime/interrupts.py)."""
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

WATCH_AFTER_SHUTDOWN = """
import signal, sys, time
from types import SimpleNamespace
sys.path.insert(0, sys.argv[1])
import ray
from pipelines.runtime import interrupts
from pipelines.runtime.ray_cluster import free_port

interrupts.RAY_GONE_GRACE_S = 0.2
up = [True]
ray.is_initialized = lambda: up[0]
ray.get_runtime_context = lambda: SimpleNamespace(gcs_address=f"127.0.0.1:{free_port()}")
interrupts.InterruptRecord(signal.SIGTERM, time.time(), None)
up[0] = False  # the caller shut its Ray down; no GCS answers at that address now
time.sleep(2)
print("still running")
"""


@pytest.mark.slow  # a process of its own: the watch ends a process it judges stuck
def test_a_ray_this_process_shut_down_ends_the_interrupts_watch_not_the_process():
    """A signal's record watches Ray's GCS until the clean-up ends; a
    process that goes on after the signal (the suite itself, after a test
    that signals it) and then shuts its Ray down was ended with exit 143
    by the watch, which took the stopped GCS for a Ray gone under it."""
    done = subprocess.run([sys.executable, "-c", WATCH_AFTER_SHUTDOWN, str(REPO_ROOT)],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "still running"), done.stderr[-3000:]


MARKED_WHILE_THE_MAIN_THREAD_WAITS = """
import os, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
import mlflow
from pipelines.runtime.interrupts import SignalGuard

seen = []

def signal_then_watch(run_id):
    time.sleep(0.5)  # the main thread sleeps by then
    os.kill(os.getpid(), signal.SIGTERM)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not seen:
        seen.extend(["KILLED"] * (mlflow.MlflowClient().get_run(run_id).info.status == "KILLED"))
        time.sleep(0.05)

with mlflow.start_run() as run, SignalGuard():
    # as in Ray's native code, the main thread runs no Python handler while it sleeps here:
    # the signal is blocked for it, so another thread's C handler takes it
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    watcher = threading.Thread(target=signal_then_watch, args=(run.info.run_id,))
    watcher.start()
    try:
        time.sleep(3)
        print("the sleep ended with no handler run", flush=True)
    except KeyboardInterrupt:
        print("then the main thread's handler ran", flush=True)
    watcher.join()
    print("marked while the main thread slept" if seen else "not marked", flush=True)
"""


@pytest.mark.slow  # a process of its own, whose signals the test sends
def test_the_runs_are_marked_killed_while_the_main_thread_waits_in_native_code(tmp_path):
    """Under a whole-group SIGTERM the driver's main thread may sit in Ray's
    native code, which runs no Python handler, until Ray's core worker ends
    the process (exit 1) when its raylet is gone: the sweep's runs were left
    RUNNING. The signal's wake-up thread marks them at once."""
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}",
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", MARKED_WHILE_THE_MAIN_THREAD_WAITS,
                           str(REPO_ROOT)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp_path)
    assert done.stdout.splitlines() == ["then the main thread's handler ran",
                                        "marked while the main thread slept"], done.stderr[-3000:]
