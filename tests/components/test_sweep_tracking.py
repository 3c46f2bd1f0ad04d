"""A sweep's MLflow records, from the trials' outcomes (no Ray run needed)."""
import mlflow
import pytest
from mlflow.tracking import MlflowClient

from components.sweep_tracking import (
    STOPPED_EARLY_TAG,
    TRIAL_TAG,
    TrialOutcome,
    close_trial_runs,
    log_sweep_summary,
    trial_table,
)
from components.tracking import FAILURE_TAG


def open_trial_run(trial_id: str, values: list[float]) -> str:
    with mlflow.start_run(nested=True, tags={TRIAL_TAG: trial_id}) as run:
        mlflow.log_param("lr", 0.01)
        for epoch, value in enumerate(values, start=1):
            mlflow.log_metric("valid_hits_20", value, step=epoch)
    MlflowClient().set_terminated(run.info.run_id, "RUNNING")  # as a killed trial leaves it
    return run.info.run_id


def test_each_trial_run_ends_as_its_trial_did_and_the_parent_names_the_best(mlflow_store):
    outcomes = {
        "t0": TrialOutcome("t0", "trial_0", {"lr": 0.01}, "completed", 3),
        "t1": TrialOutcome("t1", "trial_1", {"lr": 0.1}, "stopped_early", 1),
        "t2": TrialOutcome("t2", "trial_2", {"lr": 0.5}, "failed", None, "out of memory"),
    }
    with mlflow.start_run() as parent:
        completed = open_trial_run("t0", [0.2, 0.5, 0.4])
        stopped = open_trial_run("t1", [0.1])
        run_ids = close_trial_runs(parent.info.run_id, outcomes,
                                   lambda settings: mlflow.log_params(settings))
        table = trial_table(outcomes, run_ids, "valid_hits_20", "max")
        best = log_sweep_summary(table, ["lr"], "valid_hits_20", "max", "sweep")
    client = MlflowClient(mlflow_store)
    runs = {key: client.get_run(run_id) for key, run_id in run_ids.items()}
    assert run_ids["t0"] == completed and run_ids["t1"] == stopped
    assert runs["t0"].info.status == "FINISHED" and STOPPED_EARLY_TAG not in runs["t0"].data.tags
    assert runs["t1"].info.status == "FINISHED" and runs["t1"].data.tags[STOPPED_EARLY_TAG] == "1"
    failed = runs["t2"]  # failed before opening a run: one is made for it
    assert failed.info.status == "FAILED" and failed.data.tags[FAILURE_TAG] == "out of memory"
    assert failed.data.params["lr"] == "0.5"
    assert failed.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert best["run_id"] == completed
    summary = client.get_run(parent.info.run_id)
    assert summary.data.metrics["best_valid_hits_20"] == pytest.approx(0.5)
    assert summary.data.params["best_lr"] == "0.01"
    assert list(table["status"]) == ["completed", "stopped_early", "failed"]
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"trials.csv", "valid_by_setting.png", "valid_by_epoch.png"} <= artifacts


def test_a_trial_run_is_named_by_its_sampled_settings():
    from components.sweep_tracking import trial_run_name

    assert trial_run_name({"num_neg": 3, "loss": "auc", "lr": 0.0123456}) \
        == "loss=auc-lr=0.01235-num_neg=3"
    assert trial_run_name({}) == "trial"
