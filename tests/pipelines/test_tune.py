"""The sweep through Ray Tune on the stand-in, checked in MLflow."""
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from pipelines.tune import main

SPACE = """
preset: smoke
metric: final_valid_hits_20
mode: max
num_samples: 1
space:
  lr: {grid: [0.01, 0.02]}
  num_neg: {choice: [1, 2]}
"""
FIXED = ["--set", "embedding_dim=8", "--set", "hidden_channels=8", "--set", "predictor_hidden=8",
         "--set", "batch_size=64", "--set", "epochs=2"]


def write_space(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_sweep_runs_a_trial_per_config_and_records_the_best(
    ray_session, mlflow_store, standin_root, tmp_path,
):
    space = write_space(tmp_path, SPACE)
    argv = ["--dataset", "ddi", "--space", str(space), "--data-root", str(standin_root), *FIXED]
    assert main(argv) == 0
    client = MlflowClient(mlflow_store)
    experiment = client.get_experiment_by_name("plnlp-ddi-tune")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if "mlflow.parentRunId" not in r.data.tags)
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.status == "FINISHED"
    assert sorted(float(t.data.params["lr"]) for t in trials) == [0.01, 0.02]
    best = max(t.data.metrics["final_valid_hits_20"] for t in trials)
    assert parent.data.metrics["best_final_valid_hits_20"] == pytest.approx(best)
    for t in trials:
        assert len(client.get_metric_history(t.info.run_id, "train_loss")) == 2


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        ("metric: x\nspace:\n  lr: {normal: [0, 1]}\n", "lr must be one of"),
        ("metric: x\nspace:\n  nope: {choice: [1]}\n", "unknown setting 'nope'"),
        ("metric: x\nspace:\n  num_neg: {choice: [0, 1]}\n", "num_neg must be at least 1"),
        ("space:\n  lr: {choice: [0.1]}\n", "needs `metric: <name>`"),
        ("- lr\n", "must be a YAML mapping"),
    ],
)
def test_bad_search_space_is_refused_before_any_work(tmp_path, capsys, space, expected):
    path = write_space(tmp_path, space)
    assert main(["--dataset", "ddi", "--space", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and expected in err
