"""An interrupted sweep keeps the trials that ended, summarised in its run,
and ``--resume`` goes on with the others in the same run, the interrupted
trial from its checkpoint."""
import os
import signal
import threading
import time
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import pipelines.runtime.interrupts
from components.recording.sweep_records import TrialOutcome, record_outcome
from components.recording.tags import (
    CHECKPOINTS_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    OUTCOME_TAG,
    TRIAL_TAG,
    TUNE_STATE_TAG,
)
from pipelines.planning.sweep_space import SearchSpace
from pipelines.runtime.interrupts import SignalGuard, library_stops_first
from pipelines.runtime.sweep import fit
from pipelines.tune import main
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from tests.pipelines.test_tune import TINY, sweep_runs, write_space

EPOCHS = 250  # of the second trial (about 50 ms each): Tune stopped it at epochs 67 and 71
CHECKPOINT_EVERY = 5
GRID_SPACE = f"""
preset: smoke
search: grid
max_concurrent: 1
space:
  epochs: {{grid: [3, {EPOCHS}]}}
"""


@pytest.fixture
def no_ray_shutdown(monkeypatch):
    """Keeps the interrupt from shutting the suite's Ray down."""
    monkeypatch.setattr(pipelines.runtime.interrupts.ray, "shutdown", lambda: None)


def interrupt_mid_trial(uri: str, experiment: str, timeout: float = 400) -> threading.Thread:
    """A thread that sends this process SIGINT once one trial has ended and
    the next has logged an epoch past its first checkpoint (a trial logs
    each epoch as it ends, so its first epoch comes before any checkpoint)."""
    def watch() -> None:
        client, deadline = MlflowClient(uri), time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = client.get_experiment_by_name(experiment)
            runs = client.search_runs([found.experiment_id]) if found else []
            trials = [r for r in runs if TRIAL_TAG in r.data.tags]
            if any(OUTCOME_TAG in r.data.tags for r in trials) and any(
                    OUTCOME_TAG not in r.data.tags
                    and len(client.get_metric_history(r.info.run_id, "train_loss"))
                    > CHECKPOINT_EVERY for r in trials):
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_the_first_signal_goes_to_the_librarys_handler_and_the_block_end_raises():
    """As Ray Tune's handler ends its loop after saving its state; a second
    signal stops at once."""
    handled = []
    with SignalGuard() as guard:
        with pytest.raises(KeyboardInterrupt), library_stops_first():
            signal.signal(signal.SIGINT, lambda signum, frame: handled.append(signum))
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)  # the guard's handler runs here, and raises nothing
            assert handled == [signal.SIGINT]
        assert guard.received == signal.SIGTERM
        with pytest.raises(KeyboardInterrupt), library_stops_first():
            signal.signal(signal.SIGINT, lambda signum, frame: handled.append(signum))
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        assert handled == [signal.SIGINT]
    guard.record.close()  # no clean-up follows here to end the record's watch on Ray


class InterruptedTuner:
    """A tuner whose trials were interrupted after one of two ended."""

    def __init__(self, parent_id: str) -> None:
        self.parent_id = parent_id

    def fit(self) -> None:
        with mlflow.start_run(nested=True, tags={TRIAL_TAG: "t0"}):
            mlflow.log_param("lr", 0.01)
            mlflow.log_metric("valid_hits_20", 0.4, step=1)
        record_outcome(self.parent_id, TrialOutcome("t0", "trial_0", {"lr": 0.01}, "completed",
                                                    1), mlflow.log_params)
        client = MlflowClient()  # a trial's process records the running one
        running = client.create_run(client.get_run(self.parent_id).info.experiment_id, tags={
            TRIAL_TAG: "t1", "mlflow.parentRunId": self.parent_id}).info.run_id
        client.log_metric(running, "valid_hits_20", 0.9, step=1)
        raise KeyboardInterrupt("SIGINT")


def test_an_interrupt_leaves_the_sweep_run_the_summary_of_the_trials_that_ended(
        mlflow_store, tmp_path):
    space = SearchSpace(tmp_path / "space.yaml", PLNLPConfig(), DATASETS.get("ddi"),
                        {"space": {"lr": {"choice": [0.01, 0.1]}}})
    client = MlflowClient(mlflow_store)
    with mlflow.start_run(run_name="sweep") as parent, pytest.raises(KeyboardInterrupt):
        fit(InterruptedTuner(parent.info.run_id), space, parent.info, verbose=False)
    summary = client.get_run(parent.info.run_id)
    assert summary.data.metrics["best/valid_hits_20"] == pytest.approx(0.4)  # not the running one
    assert summary.data.tags["best_lr"] == "0.01"
    table = pd.read_csv(client.download_artifacts(parent.info.run_id, "trials.csv",
                                                  str(tmp_path)))
    assert list(table["trial"]) == ["lr=0.01"] and list(table["status"]) == ["completed"]
    assert {"trials.csv", "valid_by_setting.png", "valid_by_epoch.png"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id)}


def epochs_of(client: MlflowClient, run_id: str) -> list[int]:
    return sorted(m.step for m in client.get_metric_history(run_id, "train_loss"))


@pytest.mark.slow
def test_an_interrupted_sweep_keeps_its_ended_trials_and_resume_finishes_it(
        ray_session, mlflow_store, standin_root, tmp_path, no_ray_shutdown, capsys, monkeypatch):
    space = write_space(tmp_path, GRID_SPACE)
    data = ["--dataset", "ddi", "--data-root", str(standin_root)]
    watcher = interrupt_mid_trial(mlflow_store, "resumed")
    with pytest.raises(SystemExit) as exited:
        main([*data, "--space", str(space), "--experiment", "resumed", *TINY,
              "--set", f"checkpoint_every={CHECKPOINT_EVERY}"])
    watcher.join()
    err = capsys.readouterr().err
    assert exited.value.code == 130, err
    client = MlflowClient(mlflow_store)
    parent, children = sweep_runs(mlflow_store, "resumed")
    parent_id = parent.info.run_id
    line = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert line == [f"interrupted: SIGINT (Ctrl-C) stopped the job and Ray was shut down (sweep "
                    f"run {parent_id} KILLED with 1 trial ended; go on with --resume "
                    f"{parent_id})"]
    assert "Tuner.restore" not in err
    # the parent holds the ended trial, summarised; no trial's epoch is the sweep's
    assert parent.info.status == "KILLED" and INTERRUPTED_TAG not in parent.data.tags
    assert parent.data.tags[FAILURE_TAG] == "interrupted by SIGINT (Ctrl-C)"
    ended = [c for c in children if OUTCOME_TAG in c.data.tags]
    killed = [c for c in children if OUTCOME_TAG not in c.data.tags]
    assert len(ended) == 1 and ended[0].info.status == "FINISHED"
    assert len(killed) == 1 and killed[0].info.status == "KILLED"
    table = pd.read_csv(client.download_artifacts(parent_id, "trials.csv", str(tmp_path)))
    assert list(table["run_id"]) == [ended[0].info.run_id]
    assert list(table["status"]) == ["completed"]
    assert parent.data.metrics["best/valid_hits_20"] == pytest.approx(
        table["best_valid_hits_20"][0])
    assert parent.data.tags["best_epochs"] == ended[0].data.params["epochs"] == "3"
    assert parent.data.tags["best_trial_run_id"] == ended[0].info.run_id
    assert {"trials.csv", "valid_by_setting.png", "valid_by_epoch.png"} <= {
        a.path for a in client.list_artifacts(parent_id)}
    # the interrupted trial keeps its checkpoints, which the resumed sweep goes on from
    stopped_at = max(epochs_of(client, killed[0].info.run_id))
    assert Path(killed[0].data.tags[CHECKPOINTS_TAG]).is_dir()
    state = Path(parent.data.tags[TUNE_STATE_TAG])
    assert state.is_dir()

    elsewhere = tmp_path / "elsewhere"  # the run id is all --resume needs, from any folder
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["--resume", parent_id]) == 0
    out = capsys.readouterr().out
    assert f"MLflow sweep run {parent_id}" in out and "2 trials: 2 completed" in out
    parent, children = sweep_runs(mlflow_store, "resumed")
    assert parent.info.status == "FINISHED" and FAILURE_TAG not in parent.data.tags
    assert TUNE_STATE_TAG not in parent.data.tags and not state.exists()
    assert len(children) == 2 and all(c.info.status == "FINISHED" for c in children)
    again = client.get_run(killed[0].info.run_id)
    assert FAILURE_TAG not in again.data.tags and INTERRUPTED_TAG not in again.data.tags
    assert CHECKPOINTS_TAG not in again.data.tags
    assert not Path(killed[0].data.tags[CHECKPOINTS_TAG]).exists()
    restored = [m.value for m in client.get_metric_history(again.info.run_id,
                                                           "restored_from_epoch")]
    # every epoch printed before the signal is logged, so the newest checkpoint
    # may be behind the last epoch logged, never a whole period
    assert len(restored) == 1 and restored[0] % CHECKPOINT_EVERY == 0
    assert abs(restored[0] - stopped_at) < CHECKPOINT_EVERY
    assert epochs_of(client, again.info.run_id) == list(range(1, EPOCHS + 1))
    table = pd.read_csv(client.download_artifacts(parent_id, "trials.csv", str(tmp_path)))
    assert sorted(table["run_id"]) == sorted(c.info.run_id for c in children)
    assert sorted(table["epochs"]) == [3, EPOCHS]
    best = table.loc[table["best_valid_hits_20"].idxmax()]
    assert parent.data.params["best_epochs"] == str(best["epochs"])
    assert "best_epochs" not in parent.data.tags
    assert parent.data.metrics["best/valid_hits_20"] == pytest.approx(best["best_valid_hits_20"])
