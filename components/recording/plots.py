"""The learning-curve pictures a run leaves in MLflow. Matplotlib keeps its
font cache in this node's scratch folder unless ``MPLCONFIGDIR`` says
otherwise: a job on a cluster writes nothing into its home folder."""
import os
from pathlib import Path

from components.storage.location import node_scratch_dir

os.environ.setdefault("MPLCONFIGDIR", str(node_scratch_dir() / "matplotlib"))
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FormatStrFormatter,
    LogLocator,
    MaxNLocator,
    NullFormatter,
)


def plot_learning_curve(table: pd.DataFrame, main_metric: str, best_epoch: int, title: str,
                        path: Path) -> None:
    """The training loss and the validation and test ``main_metric`` per
    epoch, the best validation epoch marked, titled ``title``."""
    figure, (loss_axis, metric_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    figure.suptitle(title)
    loss_axis.plot(table["epoch"], table["train_loss"], color="tab:gray")
    loss_axis.set(xlabel="epoch", ylabel="train loss per positive pair")
    _readable_loss_axis(loss_axis, table["train_loss"])
    key = f"valid_{main_metric}"
    evaluated = table.dropna(subset=[key]) if key in table else table.iloc[0:0]
    for split, color in (("valid", "tab:blue"), ("test", "tab:orange")):
        if f"{split}_{main_metric}" in evaluated:
            metric_axis.plot(evaluated["epoch"], evaluated[f"{split}_{main_metric}"],
                             marker=".", color=color, label=split)
    best = evaluated[evaluated["epoch"] == best_epoch]
    if not best.empty:
        for axis in (loss_axis, metric_axis):
            axis.axvline(best_epoch, color="tab:green", linestyle="--", linewidth=1)
        metric_axis.plot(best_epoch, best[key].iloc[0], marker="*", markersize=14,
                         color="tab:green", label=f"best validation, epoch {best_epoch}")
    metric_axis.set(xlabel="epoch", ylabel=main_metric)
    metric_axis.legend()
    for axis in (loss_axis, metric_axis):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    _save(figure, path)


def plot_validation_curves(curves: dict[str, pd.Series], main_metric: str, title: str,
                           path: Path) -> None:
    """Each run's validation ``main_metric`` per epoch (a series indexed by
    epoch, one per run, labelled by its key: a seed or a sweep's trial)."""
    figure, axis = plt.subplots(figsize=(7, 4.2))
    figure.suptitle(title)
    for label, curve in curves.items():
        axis.plot(curve.index, curve.values, marker=".", label=label)
    axis.set(xlabel="epoch", ylabel=f"valid {main_metric}")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.legend(ncol=2, fontsize="small")
    _save(figure, path)


def _readable_loss_axis(axis: Axes, loss: pd.Series) -> None:
    """A log axis with labelled 1-2-5 ticks where the loss spans more than a
    decade, else a linear one."""
    positive = loss[loss > 0]
    if positive.empty or positive.max() / positive.min() <= 10:
        return
    axis.set_yscale("log")
    axis.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0), numticks=15))
    axis.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    axis.yaxis.set_minor_formatter(NullFormatter())


def _save(figure: plt.Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_metric_by_setting(table: pd.DataFrame, settings: list[str], metric: str, title: str,
                           path: Path) -> None:
    """``metric`` of every trial (a row of ``table``) against each searched
    setting, one panel per setting; numbers on a numeric axis (a log one
    where they span more than a decade), other values as categories."""
    figure, axes = plt.subplots(1, len(settings), figsize=(4.2 * len(settings), 4),
                                squeeze=False)
    figure.suptitle(title)
    for axis, setting in zip(axes[0], settings, strict=True):
        values = pd.to_numeric(table[setting], errors="coerce")
        if values.isna().any():  # categories: strings, booleans, mixed
            values = table[setting].astype(str)
        axis.scatter(values, table[metric], color="tab:blue")
        axis.set(xlabel=setting, ylabel=metric)
        numeric = values.dtype.kind in "fi"
        if numeric and values.min() > 0 and values.max() / values.min() > 10:
            axis.set_xscale("log")
    _save(figure, path)
