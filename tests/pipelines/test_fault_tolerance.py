"""Runs that survive: a Train worker of a DDP group, or a one-worker run's
training actor, killed mid-run restarts from the latest checkpoint, and
``--resume`` goes on with a failed run in the same MLflow run."""
import os
import signal
import threading
import time

import psutil
import pytest
from mlflow.tracking import MlflowClient

from pipelines.run import main
from plnlp_testing.processes import training_processes

pytestmark = pytest.mark.slow

# Short epochs (two batches, 0.3-0.7 s each with their evaluation) give the kill after
# epoch 2 at least 5 s to land before the last one (at 12 epochs a loaded machine's DDP run
# once logged epoch 2 when it had trained all 12); full ones (about 3 s) cost 30 s a test
EPOCHS = 20
REAL_DDI = ["--dataset", "ddi", "--preset", "smoke", "--set", f"epochs={EPOCHS}",
            "--set", "max_batches_per_epoch=2", "--set", "checkpoint_every=1"]


def run_in_background(argv: list[str]) -> tuple[threading.Thread, dict]:
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("code", main(argv)))
    thread.start()
    return thread, outcome


def the_run(uri: str):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("plnlp-ddi")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    return client, runs[0] if runs else None


def logged_epochs(uri: str) -> list[int]:
    client, run = the_run(uri)
    if run is None:
        return []
    return sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss"))


def own_train_workers() -> list[psutil.Process]:
    """The Ray Train workers and training actors of this suite's Ray."""
    import ray

    return training_processes(ray._private.worker._global_node)


def kill_a_train_worker_after_epoch(uri: str, epoch: int, timeout: float = 300) -> None:
    """Waits until MLflow holds ``epoch``, then SIGKILLs one of this suite's
    Ray Train workers or its training actor."""
    deadline = time.monotonic() + timeout
    while max(logged_epochs(uri), default=0) < epoch:
        assert time.monotonic() < deadline, "the run never reached the epoch"
        time.sleep(0.2)
    workers = own_train_workers()
    assert workers, "no Ray Train worker or training actor to kill"
    os.kill(workers[-1].pid, signal.SIGKILL)


@pytest.mark.parametrize("workers", ["1", "2"])  # a training actor; a DDP worker group
def test_a_killed_worker_restarts_from_the_latest_checkpoint_and_logs_each_epoch_once(
        ray_session, mlflow_store, ddi_root, workers):
    thread, outcome = run_in_background([*REAL_DDI, "--num-workers", workers,
                                         "--data-root", str(ddi_root)])
    kill_a_train_worker_after_epoch(mlflow_store, 2)
    thread.join(timeout=600)
    assert outcome.get("code") == 0
    client, run = the_run(mlflow_store)
    assert run.info.status == "FINISHED"
    # MLflow holds an epoch once Ray Train holds its checkpoint, so the kill's
    # restart goes on after the last epoch logged then, or later (a loaded
    # machine may add restarts of its own: Ray's health checks time out)
    restored = [m.value for m in client.get_metric_history(run.info.run_id,
                                                           "restored_from_epoch")]
    assert restored and 2 <= max(restored) < EPOCHS
    assert logged_epochs(mlflow_store) == list(range(1, EPOCHS + 1))
    assert 0.0 < run.data.metrics["final/test_hits_20"] <= 1.0


def test_resume_goes_on_with_a_failed_run_after_its_last_checkpoint(
        ray_session, mlflow_store, ddi_root):
    """A run of an encoder layer of one's own (examples/link_parts), its
    actor killed with no restart left: ``--resume`` finds the part its
    config names and goes on from the newest checkpoint in the same run."""
    argv = [*REAL_DDI, "--data-root", str(ddi_root),  # one worker: its training actor
            "--set", "encoder=examples.link_parts.layers:GINLayer"]
    thread, outcome = run_in_background([*argv, "--max-failures", "0"])
    kill_a_train_worker_after_epoch(mlflow_store, 2)
    thread.join(timeout=600)
    assert outcome.get("code") == 1
    client, run = the_run(mlflow_store)
    assert run.info.status == "FAILED"
    stopped_at = max(logged_epochs(mlflow_store))
    assert 2 <= stopped_at < EPOCHS

    assert main([*argv, "--resume", run.info.run_id]) == 0
    client, again = the_run(mlflow_store)
    assert again.info.run_id == run.info.run_id and again.info.status == "FINISHED"
    assert "failure_reason" in run.data.tags and "failure_reason" not in again.data.tags
    # from the newest checkpoint in storage: the last epoch MLflow held, or one written after it
    restored = [m.value for m in client.get_metric_history(run.info.run_id,
                                                           "restored_from_epoch")]
    assert len(restored) == 1 and stopped_at <= restored[0] < EPOCHS
    assert logged_epochs(mlflow_store) == list(range(1, EPOCHS + 1))
    assert 0.0 < again.data.metrics["final/test_hits_20"] <= 1.0
