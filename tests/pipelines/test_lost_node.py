"""A lost node costs at most ``checkpoint_every`` epochs: on a Ray cluster of
three nodes on this machine, once Train's controller holds a reported
checkpoint, the node holding the Train worker goes as soon as a newer one is
complete in storage, which the controller has not taken (it polls every
2 s, and a checkpoint written within 3 s of a report is not reported).

The cluster is this module's own (``ray.cluster_utils.Cluster``: a head
without CPUs, two worker nodes of one CPU), never the suite's local Ray; the
main job runs as a user runs it, with ``RAY_ADDRESS`` naming the cluster
and a local work folder, which every node of this machine sees."""
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from mlflow.tracking import MlflowClient
from pyarrow.fs import LocalFileSystem

from components.checkpoints import checkpoint_epoch, stored_checkpoints
from tests.conftest import REPO_ROOT
from tests.processes import pipeline_env, process_group

pytestmark = pytest.mark.slow

EPOCHS, EVERY = 30, 2


@pytest.fixture
def cluster() -> Iterator[object]:
    """A head without CPUs (the driver and Train's controller) and two
    worker nodes of one CPU, stopped with every process they started."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


def train_worker_node(cluster: object) -> tuple[object, list[psutil.Process]]:
    """The worker node whose raylet started the Ray Train worker, and that
    worker's processes."""
    from ray._private import ray_constants

    for node in list(cluster.worker_nodes):
        raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
        workers = []
        for process in psutil.Process(raylet).children(recursive=True):
            try:
                if "ray::RayTrainWorker" in " ".join(process.cmdline()):
                    workers.append(process)
            except psutil.NoSuchProcess:
                continue
        if workers:
            return node, workers
    raise AssertionError("no Train worker on a worker node")


def newest_complete(work: Path) -> int:
    """The epoch of the newest checkpoint in the work folder that every
    worker finished writing (0: none)."""
    epochs = [found.epoch for run in work.glob("runs/*/*") if run.is_dir()
              for found in stored_checkpoints(LocalFileSystem(), str(run), world_size=1)
              if found.complete]
    return max(epochs, default=0)


def controllers_checkpoint(work: Path) -> int:
    """The epoch of the checkpoint Train's controller holds, from the
    snapshot it keeps in storage (0: none yet)."""
    for snapshot in work.glob("runs/*/*/checkpoint_manager_snapshot.json"):
        try:
            latest = json.loads(snapshot.read_text())["latest_checkpoint_result"]
        except (OSError, ValueError, KeyError):  # being written
            continue
        if latest:
            return checkpoint_epoch(latest["checkpoint_dir_name"]) or 0
    return 0


def printed_epochs(log: Path) -> dict[str, list[int]]:
    """The epochs each Train worker printed, by its process id, in order."""
    by_worker: dict[str, list[int]] = {}
    for pid, epoch in re.findall(r"RayTrainWorker pid=(\d+)[^)]*\) epoch (\d+)/", log.read_text()):
        by_worker.setdefault(pid, []).append(int(epoch))
    return by_worker


def test_a_lost_node_costs_at_most_the_epochs_since_the_checkpoint_in_storage(
        cluster, ddi_root, tmp_path):
    work, log, database = tmp_path / "work", tmp_path / "run.log", tmp_path / "mlflow.db"
    env = pipeline_env(tmp_path, RAY_ADDRESS=cluster.address, RAY_DEDUP_LOGS="0",
                       MLFLOW_TRACKING_URI=f"sqlite:///{database}")
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), "--dataset", "ddi",
            "--preset", "smoke", "--data-root", str(ddi_root), "--work-dir", str(work),
            "--set", f"epochs={EPOCHS}", "--set", "max_batches_per_epoch=2",
            "--set", f"checkpoint_every={EVERY}"]
    started = time.monotonic()
    with process_group(argv, env, tmp_path, log) as process:
        deadline, held = time.monotonic() + 240, 0
        while not held or newest_complete(work) <= held:
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
            held = held or controllers_checkpoint(work)
        node, workers = train_worker_node(cluster)
        cluster.remove_node(node)
        # A worker outlives its raylet for a moment here, where a lost machine's would not:
        # once it is gone, nothing more gets written
        assert not psutil.wait_procs(workers, timeout=60)[1]
        in_storage = newest_complete(work)
        code = process.wait(timeout=240)
        print(f"the run took {time.monotonic() - started:.0f} s; the node went with the "
              f"checkpoint of epoch {in_storage} complete, the controller's of epoch {held}")
    output = log.read_text()
    assert code == 0, output[-3000:]

    client = MlflowClient(f"sqlite:///{database}")
    [run] = client.search_runs([client.get_experiment_by_name("plnlp-ddi").experiment_id])
    assert run.info.status == "FINISHED"
    logged = sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss"))
    assert logged == list(range(1, EPOCHS + 1))  # every epoch, once
    restored = sorted(m.value for m in client.get_metric_history(run.info.run_id,
                                                                 "restored_from_epoch"))
    # The first restart goes on from the newest checkpoint in storage, not the controller's; a
    # loaded machine may add restarts of its own (Ray's health checks time out), later ones.
    assert restored and restored[0] == in_storage > held
    first, second, *_ = printed_epochs(log).values()
    assert second[0] == in_storage + 1
    assert max(first) - in_storage <= EVERY, first  # epochs done, then lost: the bound
