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

# Starts the local Ray as a run does, then prints what a task and an actor see (RAY_ADDRESS,
# the variable named by argv[1], the collector's threshold) and whether the driver's own are
# as they were; waits for a line on stdin before it ends
STARTED_AND_SEEN = (
    "import gc, logging, os, sys, ray\n"
    "from pipelines.runtime.ray_cluster import start_local_ray\n"
    "names = ('RAY_ADDRESS', sys.argv[1])\n"
    "seen = lambda: [os.environ.get(name, '-') for name in names] + [gc.get_threshold()[2]]\n"
    "before = seen()\n"
    "start_local_ray(logging.WARNING)\n"
    "print('started', flush=True)\n"
    "task = ray.remote(seen)\n"
    "actor = ray.remote(type('A', (), {'seen': lambda self: seen()})).remote()\n"
    "print('seen', ray.get_runtime_context().gcs_address, *ray.get(task.remote()),"
    " *ray.get(actor.seen.remote()), before == seen(), flush=True)\n"
    "input()\n")


# one local Ray each: the dashboard and the preemption watcher asked for, then neither
@pytest.mark.parametrize(("dashboard", "watcher"), [("1", "1"), ("", None)])
def test_a_local_ray_s_dashboard_comes_when_asked_and_its_workers_know_its_address(
        tmp_path, dashboard, watcher):
    """The dashboard starts only when ``PLNLP_RAY_DASHBOARD=1`` asks for it,
    and then where it listens is printed.

    Ray's helpers in a worker (Ray Train's placement-group cleaner) find
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
    env = pipeline_env(tmp_path, PLNLP_RAY_DASHBOARD=dashboard)
    env.pop(PREEMPTION_WATCHER_VARIABLE, None)
    if watcher is not None:
        env[PREEMPTION_WATCHER_VARIABLE] = watcher
    with subprocess.Popen([sys.executable, "-c", STARTED_AND_SEEN, PREEMPTION_WATCHER_VARIABLE],
                          cwd=REPO_ROOT, env=env, text=True, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          start_new_session=True) as driver:
        lines = []
        for line in driver.stdout:
            lines.append(line)
            if line.startswith("seen "):
                break
        output = "".join(lines)
        starting = output.split("started\n", 1)[0]
        shown = re.search(r"Ray dashboard  (http://127\.0\.0\.1:\d+) while this run lasts",
                          starting)
        if dashboard:
            assert shown, output
            try:
                with urllib.request.urlopen(f"{shown.group(1)}/api/version", timeout=30):
                    pass
            except urllib.error.HTTPError as answer:  # it listens, behind Ray's token auth
                assert answer.code == 401
        else:
            assert shown is None and "dashboard" not in starting.lower(), output
        driver.communicate("\n", timeout=60)
    assert driver.returncode == 0, output
    gcs, *task_and_actor, driver_as_it_was = lines[-1].split()[1:]
    assert task_and_actor == [gcs, watcher or "0", str(FULL_COLLECTION_THRESHOLD)] * 2, output
    assert driver_as_it_was == "True", output


@pytest.mark.parametrize(("address", "asked", "workers", "held"), [
    ("", None, 1, 8), ("local", None, 3, 2), ("", None, 16, 1),
    ("head:6379", None, 1, 1), ("", 3, 1, 3), ("head:6379", 4, 2, 4)])
def test_a_worker_holds_a_local_ray_s_cpus_and_one_on_a_cluster_unless_told(
        monkeypatch, address, asked, workers, held):
    from components.train.worker_group import WorkerGroup
    from pipelines.runtime import ray_cluster

    monkeypatch.setenv("RAY_ADDRESS", address)
    monkeypatch.setattr(ray_cluster.ray, "cluster_resources", lambda: {"CPU": 8.0})
    sized = ray_cluster.sized_workers(WorkerGroup(workers, asked))
    assert (sized.num_workers, sized.cpus_per_worker) == (workers, held)
