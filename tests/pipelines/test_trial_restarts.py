"""A sweep trial that trains in its own actor survives the actor's death:
Tune restarts it, and it goes on in the same MLflow run from its newest
checkpoint, each epoch logged once."""
import os
import signal
import threading
import time

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow

EPOCHS = 12  # of two batches each (0.3-0.7 s): the kill after epoch 2 lands before the last
SPACE = """
preset: smoke
metric: valid_hits_20
search: random
num_samples: 1
space:
  lr: {loguniform: [0.001, 0.01]}
"""


def trial_run(uri: str):
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("restarts")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    children = [run for run in runs if "mlflow.parentRunId" in run.data.tags]
    return client, children[0] if children else None


def logged_epochs(uri: str) -> list[int]:
    client, run = trial_run(uri)
    if run is None:
        return []
    return sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss"))


def trial_actor_pids() -> list[int]:
    """The processes of the sweep trials' live actors (GCS's actor table)."""
    import ray

    return [actor["Pid"] for actor in ray._private.state.actors().values()
            if actor.get("ActorClassName", "").endswith("ResourceTrainable")  # Tune's wrap
            and actor.get("State") == "ALIVE"]


def test_a_killed_trial_goes_on_from_its_newest_checkpoint_in_the_same_run(
        ray_session, mlflow_store, ddi_root, tmp_path):
    from pipelines.tune import main

    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    argv = ["--dataset", "ddi", "--space", str(space), "--data-root", str(ddi_root),
            "--experiment", "restarts", "--set", f"epochs={EPOCHS}",
            "--set", "max_batches_per_epoch=2", "--set", "checkpoint_every=1",
            "--max-failures", "1"]
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("code", main(argv)))
    thread.start()
    deadline = time.monotonic() + 300
    while max(logged_epochs(mlflow_store), default=0) < 2:
        assert time.monotonic() < deadline and thread.is_alive(), "the trial never reached epoch 2"
        time.sleep(0.2)
    pids = trial_actor_pids()
    assert pids, "no trial actor to kill"
    os.kill(pids[-1], signal.SIGKILL)
    thread.join(timeout=600)
    assert outcome.get("code") == 0
    client, run = trial_run(mlflow_store)
    assert run.info.status == "FINISHED"
    restored = [m.value for m in client.get_metric_history(run.info.run_id,
                                                           "restored_from_epoch")]
    assert restored and 1 <= max(restored) < EPOCHS
    assert logged_epochs(mlflow_store) == list(range(1, EPOCHS + 1))
    assert 0.0 < run.data.metrics["final/test_hits_20"] <= 1.0
