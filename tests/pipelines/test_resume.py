"""--resume refuses a run it cannot go on with, in one sentence, before any work."""
import json

import mlflow
import pytest
import yaml

from components.train import CHECKPOINTS_TAG, SHAPES_FILE
from pipelines.run import main
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS
from plnlp_core.experiment import build_model

CONFIG = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor_hidden=8)


def recorded_run(config: PLNLPConfig, status: str = "FAILED", checkpoint=None) -> str:
    """A run as the pipeline records one, with a checkpoint's shapes file."""
    mlflow.set_experiment("plnlp-ddi")
    with mlflow.start_run() as run:
        mlflow.log_params({"dataset": config.dataset, "runs": 1})
        mlflow.log_text(yaml.safe_dump(config.to_dict()), "config.yaml")
        if checkpoint is not None:
            mlflow.set_tag(CHECKPOINTS_TAG, str(checkpoint))
    mlflow.MlflowClient().set_terminated(run.info.run_id, status)
    return run.info.run_id


def refusal(argv: list[str], capsys) -> str:
    """The ``error:`` line (MLflow may log its own lines before it)."""
    assert main(argv) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("error: ")
    return errors[0]


def test_resume_of_a_run_that_does_not_exist_is_refused(mlflow_store, capsys):
    err = refusal(["--dataset", "ddi", "--resume", "0123456789abcdef"], capsys)
    assert "there is no MLflow run 0123456789abcdef at sqlite:" in err


def test_resume_of_another_datasets_run_is_refused(mlflow_store, capsys):
    run_id = recorded_run(CONFIG.replace(dataset="collab"))
    err = refusal(["--dataset", "ddi", "--resume", run_id], capsys)
    assert f"run {run_id} trained collab, not ddi; resume it with --dataset collab" in err


def test_resume_of_a_finished_run_is_refused(mlflow_store, capsys):
    run_id = recorded_run(CONFIG, status="FINISHED")
    assert "has already finished" in refusal(["--dataset", "ddi", "--resume", run_id], capsys)


def test_resume_with_a_checkpoint_of_another_shape_is_refused(mlflow_store, tmp_path, capsys):
    checkpoint = tmp_path / "runs" / "some-run" / "checkpoint_1"
    checkpoint.mkdir(parents=True)
    model = build_model(CONFIG, DATASETS.get("ddi"), 50)
    shapes = {name: list(v.shape) for name, v in model.state_dict().items()}
    (checkpoint / SHAPES_FILE).write_text(json.dumps({"num_nodes": 50, "shapes": shapes}))
    run_id = recorded_run(CONFIG, checkpoint=tmp_path / "runs" / "some-run")
    err = refusal(["--dataset", "ddi", "--resume", run_id, "--set", "hidden_channels=16"],
                  capsys)
    assert f"the checkpoint of run {run_id} holds a model of another shape" in err


@pytest.mark.parametrize("value", ["-1"])
def test_negative_max_failures_is_refused(value, capsys):
    err = refusal(["--dataset", "ddi", "--preset", "smoke", "--max-failures", value], capsys)
    assert "--max-failures must be 0 or more" in err
