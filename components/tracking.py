"""MLflow records of a pipeline run: settings, per-epoch table, learning
curve, checkpoint and final metrics."""
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mlflow  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from components.artifacts import TrainArtifact  # noqa: E402
from plnlp_core.config import PLNLPConfig  # noqa: E402

FAILURE_TAG = "failure_reason"


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
