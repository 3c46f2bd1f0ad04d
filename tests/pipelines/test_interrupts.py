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
