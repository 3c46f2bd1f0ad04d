"""The run's description, MLflow's ``mlflow.note.content``: what the run
page shows first; and how a failed run is let go."""
import os
import time

import mlflow
import pytest
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from components.recording.run_lifecycle import mark_training_experiment, open_experiment
from components.recording.run_records import describe_run, mark_failed, run_description
from components.recording.seed_summary import summary_metrics
from components.recording.tags import DESCRIPTION_TAG, EXPERIMENT_KIND_TAG
from plnlp_testing.processes import free_port

FINAL = {"final_valid_hits_20": 0.0406, "final_test_hits_20": 0.009,
         "final_valid_hits_100": 0.1383, "final_test_hits_100": 0.0836}


def test_the_description_names_the_changed_settings_and_tables_the_final_metrics():
    text = run_description("smoke", {"lr": 0.05, "epochs": 3}, FINAL, "hits_20")
    assert text.splitlines() == [
        "Final valid hits_20 **0.0406**, test hits_20 **0.0090** (the best epoch by "
        "`valid_hits_20`).",
        "",
        "Preset `smoke`; changed from it: `epochs=3`, `lr=0.05`.",
        "",
        "| metric | valid | test |",
        "| --- | --- | --- |",
        "| hits_20 | 0.0406 | 0.0090 |",
        "| hits_100 | 0.1383 | 0.0836 |",
    ]


def test_a_run_of_the_presets_own_settings_says_so_and_a_missing_split_is_blank():
    text = run_description("cpu", {}, {"final_valid_auc": 0.91}, "auc")
    assert "\nPreset `cpu`; its settings unchanged.\n" in text
    assert text.endswith("| auc | 0.9100 |  |")


def test_a_runs_seeds_headline_their_mean_and_spread_as_a_papers_table():
    summary = summary_metrics([{"final_valid_hits_20": 0.5, "final_test_hits_20": 0.40},
                               {"final_valid_hits_20": 0.7, "final_test_hits_20": 0.42}])
    text = run_description("smoke", {}, summary, "hits_20")
    assert text.startswith("Final **test hits_20 41.00 ± 1.41 (2 runs)**, **valid hits_20 "
                           "60.00 ± 14.14 (2 runs)** (the best epoch")
    assert text.endswith("| hits_20 | 0.6000 ± 0.1414 | 0.4100 ± 0.0141 |")


def test_the_description_is_the_runs_mlflow_note(mlflow_store):
    with mlflow.start_run() as run:
        describe_run("smoke", {"lr": 0.05}, FINAL, "hits_20")
    note = MlflowClient(mlflow_store).get_run(run.info.run_id).data.tags[DESCRIPTION_TAG]
    assert note == run_description("smoke", {"lr": 0.05}, FINAL, "hits_20")


def test_an_experiment_another_command_creates_at_the_same_moment_is_opened(
        mlflow_store, monkeypatch):
    """Two runs started together each find the experiment new; the one whose
    creation comes second opens the other's, not a failure."""
    first = MlflowClient(mlflow_store).create_experiment("together")
    monkeypatch.setattr(mlflow, "get_experiment_by_name", lambda name: None)
    assert open_experiment("together") == first


def refused_after_another_command(tag_is_written: bool):
    """``set_experiment_tag`` as a PostgreSQL-backed server answers the
    second of two commands that tag the experiment at once (the first's
    tag written, this one's a duplicate key); or refused with no tag."""
    really_set = MlflowClient.set_experiment_tag

    def refused(client, experiment_id, key, value):
        if tag_is_written:
            really_set(client, experiment_id, key, value)
        raise MlflowException("duplicate key value violates unique constraint "
                              '"experiment_tag_pk"', error_code="BAD_REQUEST")
    return refused


def test_a_training_experiment_tagged_by_another_command_at_the_same_moment_is_marked(
        mlflow_store, monkeypatch):
    experiment = MlflowClient(mlflow_store).create_experiment("together")
    monkeypatch.setattr(MlflowClient, "set_experiment_tag", refused_after_another_command(True))
    mark_training_experiment(experiment)
    tags = MlflowClient(mlflow_store).get_experiment(experiment).tags
    assert tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    mark_training_experiment(experiment)  # marked: no second write to be refused


def test_a_refused_tag_that_no_other_command_wrote_is_raised(mlflow_store, monkeypatch):
    experiment = MlflowClient(mlflow_store).create_experiment("refused")
    monkeypatch.setattr(MlflowClient, "set_experiment_tag", refused_after_another_command(False))
    with pytest.raises(MlflowException, match="duplicate key"):
        mark_training_experiment(experiment)


def test_a_run_failed_by_an_absent_server_is_let_go_after_one_try(mlflow_store, monkeypatch):
    """The tracking server stayed away past the run's patience: marking the
    run FAILED tries each request once (not MLflow's minutes of retries),
    raises the store's error, and lets go of the run, so that the process's
    exit does not try again."""
    mlflow.set_experiment("away")
    mlflow.start_run()
    mlflow.start_run(nested=True)
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    mlflow.set_tracking_uri(f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    try:
        with pytest.raises(Exception, match="Connection refused|Max retries"):
            mark_failed("the tracking server has not answered", tracking_away=True)
    finally:
        mlflow.set_tracking_uri(mlflow_store)  # for the tests after this one
    assert time.monotonic() - started < 10
    assert mlflow.active_run() is None and "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ
