"""MLflow records of a pipeline run: settings, per-epoch table, learning
curve, checkpoint and final metrics."""
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mlflow  # noqa: E402
import pandas as pd  # noqa: E402
import ray.train  # noqa: E402
import yaml  # noqa: E402
from mlflow.entities import Metric  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from components.artifacts import TrainArtifact  # noqa: E402
from plnlp_core.config import PLNLPConfig  # noqa: E402

FAILURE_TAG = "failure_reason"
MLFLOW_BATCH = 1000  # metrics MLflow takes in one log_batch


def log_config(config: PLNLPConfig, extra: dict[str, object]) -> None:
    """Every resolved setting as a param, and the config as ``config.yaml``."""
    settings = {**config.to_dict(), **extra}
    mlflow.log_params({key: "null" if value is None else value for key, value in settings.items()})
    mlflow.log_text(yaml.safe_dump(config.to_dict(), sort_keys=False), "config.yaml")


def log_training(trained: TrainArtifact, main_metric: str) -> None:
    """The best checkpoint, the per-epoch table and the learning curve."""
    mlflow.log_artifacts(trained.checkpoint_dir, "checkpoint")
    table = pd.DataFrame(trained.history)
    with tempfile.TemporaryDirectory() as directory:
        table.to_csv(Path(directory) / "metrics.csv", index=False)
        _plot_curve(table, main_metric, Path(directory) / "learning_curve.png")
        mlflow.log_artifacts(directory)


def _plot_curve(table: pd.DataFrame, main_metric: str, path: Path) -> None:
    figure, (loss_axis, metric_axis) = plt.subplots(1, 2, figsize=(10, 4))
    loss_axis.plot(table["epoch"], table["train_loss"])
    loss_axis.set(xlabel="epoch", ylabel="train loss per positive pair", yscale="log")
    evaluated = table.dropna(subset=[f"valid_{main_metric}"]) \
        if f"valid_{main_metric}" in table else table.iloc[0:0]
    for split in ("valid", "test"):
        key = f"{split}_{main_metric}"
        if key in evaluated:
            metric_axis.plot(evaluated["epoch"], evaluated[key], marker=".", label=split)
    metric_axis.set(xlabel="epoch", ylabel=main_metric)
    metric_axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def summary_metrics(finals: Sequence[dict[str, float]]) -> dict[str, float]:
    """``<key>_mean`` and ``<key>_std`` of each final metric over runs."""
    summary = {}
    for key in finals[0]:
        values = [final[key] for final in finals]
        summary[f"{key}_mean"] = statistics.fmean(values)
        summary[f"{key}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return summary


def mark_failed(reason: str) -> None:
    """Ends every active run as FAILED, with the reason as a tag."""
    while mlflow.active_run() is not None:
        mlflow.set_tag(FAILURE_TAG, reason[:5000])
        mlflow.end_run(status="FAILED")


class EpochLogger(ray.train.UserCallback):
    """Logs each epoch to an MLflow run from Ray Train's controller, once
    the report whose checkpoint holds it has reached the controller. A
    report lost with a dying worker is never logged: training restarts from
    an earlier checkpoint and reports those epochs again. Epochs MLflow
    already holds (a run that goes on with ``--resume``) are not logged twice.

    Args:
        tracking_uri (str): The MLflow tracking URI.
        run_id (str): The run to log to.
    """

    def __init__(self, tracking_uri: str, run_id: str) -> None:
        self.tracking_uri = tracking_uri
        self.run_id = run_id
        self.logged_through: int | None = None

    def after_report(
        self, run_context: object, metrics: list[dict], checkpoint: ray.train.Checkpoint | None,
    ) -> None:
        client = MlflowClient(self.tracking_uri)
        if self.logged_through is None:
            logged = client.get_metric_history(self.run_id, "train_loss")
            self.logged_through = max((m.step for m in logged), default=0)
        report = metrics[0]
        now = int(time.time() * 1000)
        rows = [row for row in report.get("epochs", []) if row["epoch"] > self.logged_through]
        logged = [Metric(key, float(value), now, int(row["epoch"]))
                  for row in rows for key, value in row.items() if key != "epoch"]
        if "restored_from_epoch" in report:
            epoch = int(report["restored_from_epoch"])
            logged.append(Metric("restored_from_epoch", epoch, now, epoch))
        for start in range(0, len(logged), MLFLOW_BATCH):
            client.log_batch(self.run_id, metrics=logged[start:start + MLFLOW_BATCH])
        self.logged_through = max([self.logged_through, *(int(r["epoch"]) for r in rows)])
