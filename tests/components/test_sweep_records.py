"""A sweep's MLflow records, from the trials' outcomes (no Ray run needed)."""
import mlflow
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import components.recording.run_records as tracking
from components.recording.sweep_records import (
    TrialOutcome,
    close_trial_runs,
    killed_with_its_sweep,
    log_sweep_summary,
    record_outcome,
    recorded_outcomes,
    trial_table,
    unfinished_trial_run,
)
from components.recording.tags import (
    DESCRIPTION_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    STOPPED_EARLY_TAG,
    TRIAL_TAG,
)


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
        for outcome in outcomes.values():
            record_outcome(parent.info.run_id, outcome, mlflow.log_params)
        recorded, run_ids = close_trial_runs(parent.info.run_id)
        table = trial_table(recorded, run_ids, "valid_hits_20", "max")
        best = log_sweep_summary(table, ["lr"], "valid_hits_20", "max", "sweep")
    client = MlflowClient(mlflow_store)
    runs = {key: client.get_run(run_id) for key, run_id in run_ids.items()}
    assert recorded == outcomes
    assert run_ids["t0"] == completed and run_ids["t1"] == stopped
    assert runs["t0"].info.status == "FINISHED" and STOPPED_EARLY_TAG not in runs["t0"].data.tags
    assert runs["t1"].info.status == "FINISHED" and runs["t1"].data.tags[STOPPED_EARLY_TAG] == "1"
    failed = runs["t2"]  # failed before opening a run: one is made for it
    assert failed.info.status == "FAILED" and failed.data.tags[FAILURE_TAG] == "out of memory"
    assert failed.data.params["lr"] == "0.5"
    assert failed.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert best["run_id"] == completed
    summary = client.get_run(parent.info.run_id)
    assert summary.data.metrics["best/valid_hits_20"] == pytest.approx(0.5)
    assert summary.data.params["best_lr"] == "0.01"
    assert list(table["status"]) == ["completed", "stopped_early", "failed"]
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"trials.csv", "valid_by_setting.png", "valid_by_epoch.png"} <= artifacts
    note = summary.data.tags[DESCRIPTION_TAG].splitlines()
    assert note[0] == f"Best `valid_hits_20` **0.5000** by trial `{table['trial'][0]}`."
    assert note[2] == "3 trials: 1 completed, 1 stopped early, 1 failed."
    rows = [line for line in note if line.startswith("| `")]
    assert [row.split(" | ")[1] for row in rows] == ["0.5000", "0.1000", ""]  # best first
    assert rows[0].endswith(f"| {completed} |") and "| failed |" in rows[2]


def test_an_interrupted_sweep_keeps_its_ended_trials_and_the_best_so_far_until_it_finishes(
        mlflow_store):
    """Outcomes live on the trials' runs, so a resumed sweep finds them; a
    run the interrupt stopped has none, and its trial goes on in it."""
    first = TrialOutcome("t0", "trial_0", {"lr": 0.01}, "completed", 2)
    client = MlflowClient(mlflow_store)
    with mlflow.start_run() as parent:
        parent_id = parent.info.run_id
        open_trial_run("t0", [0.2, 0.3])
        interrupted = open_trial_run("t1", [0.1])
        record_outcome(parent_id, first, mlflow.log_params)
        assert set(recorded_outcomes(parent_id)) == {"t0"}
        assert unfinished_trial_run(parent_id, "t1") == interrupted
        assert unfinished_trial_run(parent_id, "t0") is None
        outcomes, run_ids = close_trial_runs(parent_id)
        log_sweep_summary(trial_table(outcomes, run_ids, "valid_hits_20", "max"), ["lr"],
                          "valid_hits_20", "max", "sweep", finished=False)
        interim = client.get_run(parent_id)
        assert interim.data.tags["best_lr"] == "0.01" and "best_lr" not in interim.data.params
        assert interim.data.metrics["best/valid_hits_20"] == pytest.approx(0.3)
        # the interrupt killed t1's run; the resumed sweep finished it, better
        client.set_tag(interrupted, FAILURE_TAG, "interrupted by SIGINT (Ctrl-C)")
        client.set_tag(interrupted, INTERRUPTED_TAG, "1")
        client.set_terminated(interrupted, "KILLED")
        client.log_metric(interrupted, "valid_hits_20", 0.6, step=2)
        record_outcome(parent_id, TrialOutcome("t1", "trial_1", {"lr": 0.1}, "completed", 2),
                       mlflow.log_params)
        outcomes, run_ids = close_trial_runs(parent_id)
        table = trial_table(outcomes, run_ids, "valid_hits_20", "max")
        log_sweep_summary(table, ["lr"], "valid_hits_20", "max", "sweep")
    resumed = client.get_run(interrupted)
    assert resumed.info.status == "FINISHED"
    assert FAILURE_TAG not in resumed.data.tags and INTERRUPTED_TAG not in resumed.data.tags
    assert list(table["trial"]) == ["lr=0.01", "lr=0.1"]
    summary = client.get_run(parent_id)
    assert summary.data.params["best_lr"] == "0.1" and "best_lr" not in summary.data.tags
    assert summary.data.metrics["best/valid_hits_20"] == pytest.approx(0.6)


def test_a_trial_run_is_named_by_its_sampled_settings():
    from components.recording.sweep_records import trial_run_name

    assert trial_run_name({"num_neg": 3, "loss": "auc", "lr": 0.0123456}) \
        == "loss=auc-lr=0.01235-num_neg=3"
    assert trial_run_name({}) == "trial"
    assert trial_run_name({"encoder": "examples.link_parts.layers:GINLayer",
                           "encoder_options.eps": 0.1}) \
        == "encoder=GINLayer-encoder_options.eps=0.1"


def test_trials_csv_and_the_epoch_plot_name_each_trial_by_its_settings(
        mlflow_store, monkeypatch, tmp_path):
    """Not Tune's ``SweepTrial_d3ea5_00000``: the legend and the table say
    which settings a curve or row is, as the trial's run name does; two
    trials Tune sampled alike are numbered apart."""
    legends = []
    monkeypatch.setattr(tracking, "plot_validation_curves",
                        lambda curves, *args: legends.append(list(curves)))
    outcomes = {
        "t0": TrialOutcome("t0", "SweepTrial_d3ea5_00000", {"lr": 0.001, "num_neg": 3},
                           "completed", 2),
        "t1": TrialOutcome("t1", "SweepTrial_d3ea5_00001", {"lr": 0.05, "num_neg": 1},
                           "completed", 2),
        "t2": TrialOutcome("t2", "SweepTrial_d3ea5_00002", {"lr": 0.05, "num_neg": 1},
                           "completed", 2),
    }
    with mlflow.start_run() as parent:
        for trial_id in outcomes:
            open_trial_run(trial_id, [0.1, 0.2])
        for outcome in outcomes.values():
            record_outcome(parent.info.run_id, outcome, mlflow.log_params)
        recorded, run_ids = close_trial_runs(parent.info.run_id)
        log_sweep_summary(trial_table(recorded, run_ids, "valid_hits_20", "max"),
                          ["lr", "num_neg"], "valid_hits_20", "max", "sweep")
    names = ["lr=0.001-num_neg=3", "lr=0.05-num_neg=1", "lr=0.05-num_neg=1 #2"]
    csv = MlflowClient(mlflow_store).download_artifacts(parent.info.run_id, "trials.csv",
                                                         str(tmp_path))
    assert list(pd.read_csv(csv)["trial"]) == names
    assert legends == [names]


@pytest.mark.parametrize(("sweep_status", "trial_status"), [("KILLED", "KILLED"),
                                                            ("RUNNING", "FAILED")])
def test_a_trial_that_errs_after_its_sweep_was_killed_ends_killed(mlflow_store, sweep_status,
                                                                   trial_status):
    """A whole-group SIGTERM ends the trials' Ray under them: a trial's error
    then left its run FAILED after the driver had marked it KILLED. An error
    in a sweep that was not interrupted still fails the trial."""
    client = MlflowClient()
    sweep = client.create_run(client.get_experiment_by_name("Default").experiment_id)
    sweep_id = sweep.info.run_id
    client.set_tag(sweep_id, FAILURE_TAG, "interrupted by SIGTERM")
    client.set_terminated(sweep_id, sweep_status)
    with pytest.raises(SystemExit):
        with mlflow.start_run(parent_run_id=sweep_id, tags={TRIAL_TAG: "t0"}) as trial, \
                killed_with_its_sweep(sweep_id):
            raise SystemExit(1)  # what Ray's SIGTERM handler raises in a worker
    ended = client.get_run(trial.info.run_id)
    assert ended.info.status == trial_status
    assert (ended.data.tags.get(FAILURE_TAG) == "interrupted by SIGTERM") == (
        trial_status == "KILLED")
    assert mlflow.active_run() is None
