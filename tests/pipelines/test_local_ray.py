"""The local Ray a run starts when ``RAY_ADDRESS`` is unset: without the
dashboard, unless ``PLNLP_RAY_DASHBOARD=1`` asks for it, and then where it
listens is printed."""
import re
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from plnlp_testing.processes import pipeline_env
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

START = ("import logging\n"
         "from pipelines.runtime.ray_cluster import start_local_ray\n"
         "start_local_ray(logging.WARNING)\n"
         "print('started', flush=True)\n"
         "input()\n")


@pytest.mark.parametrize("asked", ["1", ""])
def test_the_dashboard_starts_only_when_asked_and_its_address_is_printed(tmp_path, asked):
    env = pipeline_env(tmp_path, PLNLP_RAY_DASHBOARD=asked)
    with subprocess.Popen([sys.executable, "-c", START], cwd=REPO_ROOT, env=env, text=True,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, start_new_session=True) as driver:
        lines = []
        for line in driver.stdout:
            lines.append(line)
            if line.startswith("started"):
                break
        shown = re.search(r"Ray dashboard  (http://127\.0\.0\.1:\d+) while this run lasts",
                          "".join(lines))
        if asked:
            assert shown, "".join(lines)
            try:
                with urllib.request.urlopen(f"{shown.group(1)}/api/version", timeout=30):
                    pass
            except urllib.error.HTTPError as answer:  # it listens, behind Ray's token auth
                assert answer.code == 401
        else:
            assert shown is None and "dashboard" not in "".join(lines).lower(), "".join(lines)
        driver.communicate("\n", timeout=60)
    assert driver.returncode == 0


ENVIRONMENT_SEEN = (
    "import gc, logging, os, sys, ray\n"
    "from pipelines.runtime.ray_cluster import start_local_ray\n"
    "names = ('RAY_ADDRESS', sys.argv[1])\n"
    "seen = lambda: [os.environ.get(name, '-') for name in names] + [gc.get_threshold()[2]]\n"
    "before = seen()\n"
    "start_local_ray(logging.WARNING)\n"
    "task = ray.remote(seen)\n"
    "actor = ray.remote(type('A', (), {'seen': lambda self: seen()})).remote()\n"
    "print(ray.get_runtime_context().gcs_address, *ray.get(task.remote()),"
    " *ray.get(actor.seen.remote()), before == seen(), flush=True)\n")


@pytest.mark.parametrize("watcher", [None, "1"])
def test_the_workers_of_a_local_ray_know_its_address_and_the_driver_is_left_as_it_was(
        tmp_path, watcher):
    """Ray's helpers in a worker (Ray Train's placement-group cleaner) find
    this Ray by ``RAY_ADDRESS`` among several; the workers inherit it from
    the raylet, not from a job ``runtime_env`` (which would keep every
    prestarted worker idle), and the driver's own environment is restored.
    Ray Train's controller, a worker, reads there that it starts no
    preemption watcher with its worker groups, unless the user said otherwise.
    Each worker, as it starts, makes its full garbage collections rarer
    (:mod:`pipelines.runtime.worker_collections`); the driver's are left as
    they were."""
    from ray.train.v2._internal.constants import ENABLE_PREEMPTION_WATCHER_ENV_VAR

    from pipelines.runtime.ray_cluster import PREEMPTION_WATCHER_VARIABLE
    from pipelines.runtime.worker_collections import FULL_COLLECTION_THRESHOLD

    assert PREEMPTION_WATCHER_VARIABLE == ENABLE_PREEMPTION_WATCHER_ENV_VAR  # the one Ray reads
    env = pipeline_env(tmp_path)
    env.pop("RAY_ADDRESS", None)
    env.pop(PREEMPTION_WATCHER_VARIABLE, None)
    if watcher is not None:
        env[PREEMPTION_WATCHER_VARIABLE] = watcher
    done = subprocess.run([sys.executable, "-c", ENVIRONMENT_SEEN, PREEMPTION_WATCHER_VARIABLE],
                          cwd=REPO_ROOT, env=env, text=True, capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr
    gcs, *task_and_actor, driver_as_it_was = done.stdout.split()[-8:]
    assert task_and_actor == [gcs, watcher or "0", str(FULL_COLLECTION_THRESHOLD)] * 2, \
        done.stdout
    assert driver_as_it_was == "True", done.stdout


@pytest.mark.parametrize(("address", "asked", "workers", "held"), [
    ("", None, 1, 8), ("local", None, 3, 2), ("", None, 16, 1),
    ("head:6379", None, 1, 1), ("", 3, 1, 3), ("head:6379", 4, 2, 4)])
def test_a_worker_holds_a_local_ray_s_cpus_and_one_on_a_cluster_unless_told(
        monkeypatch, address, asked, workers, held):
    from components.train.workers import WorkerGroup
    from pipelines.runtime import ray_cluster

    monkeypatch.setenv("RAY_ADDRESS", address)
    monkeypatch.setattr(ray_cluster.ray, "cluster_resources", lambda: {"CPU": 8.0})
    sized = ray_cluster.sized_workers(WorkerGroup(workers, asked))
    assert (sized.num_workers, sized.cpus_per_worker) == (workers, held)
