"""What a new user sees: only the product's lines and a summary, runs that
can be told apart, the MLflow UI on the runs table, learning curves."""
import os
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from pipelines.run import main
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

STANDIN = ["--set", "embedding_dim=16", "--set", "hidden_channels=16",
           "--set", "predictor_hidden=16", "--set", "batch_size=64", "--set", "epochs=2"]


def test_a_smoke_run_prints_progress_and_a_summary_and_none_of_rays_reports(
        standin_root, tmp_path):
    env = {**os.environ, "PLNLP_CACHE_DIR": str(tmp_path / "cache"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "pipelines/run.py", "--dataset", "ddi", "--preset", "smoke",
         "--data-root", str(standin_root), *STANDIN],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "TrainingReport(" not in output
    assert "Checkpoint successfully created" not in output
    assert "epoch 2/2" in output and "ETA" in output
    for line in ("run ddi-smoke-", "best epoch", "final valid", "final test", "MLflow run",
                 "see it with    mlflow ui --backend-store-uri sqlite:///",
                 "then http://127.0.0.1:5000/#/experiments/1/runs?workflowType=machine_learning"
                 "&orderByKey=metrics.%60final%2Fvalid_hits_20%60&orderByAsc=false",
                 "use the model  python pipelines/predict.py --model runs:/"):
        assert line in output, line
    for noise in ("input example", "Downloading artifacts"):  # MLflow's, as it logs the model
        assert noise not in output, noise


def test_runs_with_other_overrides_have_other_names_in_a_training_experiment(
        ray_session, mlflow_store, standin_root):
    base = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root), *STANDIN]
    assert main([*base, "--set", "lr=0.01"]) == 0
    assert main([*base, "--set", "lr=0.05", "--seed", "3"]) == 0
    client = MlflowClient(mlflow_store)
    experiment = client.get_experiment_by_name("plnlp-ddi")
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    names = sorted(r.info.run_name for r in client.search_runs([experiment.experiment_id]))
    assert len(set(names)) == 2
    assert names[0].endswith("lr=0.01-seed0") and names[1].endswith("lr=0.05-seed3")
    assert main([*base, "--set", "lr=0.01"]) == 0  # the same run again
    again = {r.info.run_name for r in client.search_runs([experiment.experiment_id])} - set(names)
    assert again == {f"{names[0]}-2"}
