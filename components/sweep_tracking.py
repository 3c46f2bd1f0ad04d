"""MLflow records of a sweep: one child run per trial under the sweep's
parent run, each closed as its trial ended (FINISHED, FINISHED tagged
``stopped_early`` with the epoch, or FAILED with the reason), and the
parent's summary: the best trial, a table of every trial and the plots."""
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mlflow
import pandas as pd
from mlflow.tracking import MlflowClient
from ray import tune

from components.checkpoints import CHECKPOINTS_TAG
from components.plots import plot_metric_by_setting
from components.storage import location
from components.sweep_report import EPOCH
from components.tracking import FAILURE_TAG, log_validation_curves

TRIAL_TAG = "plnlp.trial_id"
STOPPED_EARLY_TAG = "stopped_early"
BEST_TRIAL_TAG = "best_trial_run_id"
PARENT_TAG = "mlflow.parentRunId"


@dataclass(frozen=True)
class TrialOutcome:
    """How a trial ended: ``completed``, ``stopped_early`` (by the
    scheduler, after ``epoch``) or ``failed`` (with ``reason``)."""

    trial_id: str
    trial_name: str
    settings: dict
    status: str
    epoch: int | None = None
    reason: str | None = None


def trial_run_name(settings: dict) -> str:
    """A trial's run name: its sampled settings, e.g. ``loss=auc-num_neg=3``,
    so that the runs table tells trials apart at a glance."""
    parts = [f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
             for key, value in sorted(settings.items())]
    return "-".join(parts)[:250] or "trial"


class TrialOutcomes(tune.Callback):
    """Collects each trial's :class:`TrialOutcome` on the sweep's driver and
    prints one line as each trial ends (Tune's own tables stay off the
    console unless ``--verbose``).

    Args:
        describe (Callable): Turns a trial's error into its one-line reason.
        metric (str): The validation metric trials are compared by.
    """

    def __init__(self, describe: Callable[[BaseException], str], metric: str) -> None:
        self.describe = describe
        self.metric = metric
        self.outcomes: dict[str, TrialOutcome] = {}

    def on_trial_complete(self, iteration: int, trials: list, trial: tune.experiment.Trial,
                          **info: object) -> None:
        last = trial.last_result
        completed = any(key.startswith("final_") for key in last)
        self._record(trial, "completed" if completed else "stopped_early", last.get(EPOCH))

    def on_trial_error(self, iteration: int, trials: list, trial: tune.experiment.Trial,
                       **info: object) -> None:
        error = trial.get_error()
        reason = self.describe(error) if error is not None else "the trial failed"
        self._record(trial, "failed", trial.last_result.get(EPOCH), reason)

    def _record(self, trial: tune.experiment.Trial, status: str, epoch: int | None,
                reason: str | None = None) -> None:
        outcome = TrialOutcome(trial.trial_id, str(trial), dict(trial.config), status, epoch,
                               reason)
        self.outcomes[trial.trial_id] = outcome
        value = trial.last_result.get(self.metric)
        result = reason if reason else (f"{self.metric} {value:.4f}" if value is not None
                                         else "not evaluated")
        print(f"trial {trial_run_name(outcome.settings)} {status.replace('_', ' ')} at epoch "
              f"{epoch if epoch is not None else 0}: {result}", flush=True)


def close_trial_runs(parent_run_id: str, outcomes: dict[str, TrialOutcome],
                     log_settings: Callable[[dict], None]) -> dict[str, str]:
    """Ends every trial's child run as its trial ended (a trial that failed
    before opening one gets one, logged by ``log_settings``), removes the
    checkpoints a stopped trial left, and returns each trial's run id."""
    client = MlflowClient()
    runs = {run.data.tags.get(TRIAL_TAG): run for run in child_runs(client, parent_run_id)}
    run_ids = {}
    for trial_id, outcome in outcomes.items():
        run = runs.get(trial_id) or _open_failed_trial_run(parent_run_id, outcome, log_settings)
        run_id = run.info.run_id
        if outcome.status == "stopped_early":
            client.set_tag(run_id, STOPPED_EARLY_TAG, str(outcome.epoch))
        if outcome.status == "failed":
            client.set_tag(run_id, FAILURE_TAG, (outcome.reason or "")[:5000])
        client.set_terminated(run_id, "FAILED" if outcome.status == "failed" else "FINISHED")
        if CHECKPOINTS_TAG in run.data.tags:  # left by a trial that did not finish
            location(run.data.tags[CHECKPOINTS_TAG]).remove()
            client.delete_tag(run_id, CHECKPOINTS_TAG)
        run_ids[trial_id] = run_id
    return run_ids


def child_runs(client: MlflowClient, parent_run_id: str) -> list:
    """The runs nested under ``parent_run_id``."""
    parent = client.get_run(parent_run_id)
    return client.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.`{PARENT_TAG}` = '{parent_run_id}'")


def _open_failed_trial_run(parent_run_id: str, outcome: TrialOutcome,
                           log_settings: Callable[[dict], None]) -> object:
    experiment_id = MlflowClient().get_run(parent_run_id).info.experiment_id
    with mlflow.start_run(experiment_id=experiment_id, parent_run_id=parent_run_id,
                          run_name=trial_run_name(outcome.settings), nested=True,
                          tags={TRIAL_TAG: outcome.trial_id}) as run:
        log_settings(outcome.settings)
    return mlflow.get_run(run.info.run_id)


def trial_table(outcomes: dict[str, TrialOutcome], run_ids: dict[str, str], metric: str,
                mode: str) -> pd.DataFrame:
    """One row per trial: its run, how it ended, its searched settings, its
    best ``metric`` over the evaluated epochs and its final metrics."""
    client = MlflowClient()
    rows = []
    for trial_id, outcome in outcomes.items():
        run = client.get_run(run_ids[trial_id])
        history = [m.value for m in client.get_metric_history(run.info.run_id, metric)]
        best = (max if mode == "max" else min)(history) if history else float("nan")
        finals = {k: v for k, v in run.data.metrics.items() if k.startswith("final_")}
        rows.append({"trial": outcome.trial_name, "run_id": run.info.run_id,
                     "status": outcome.status, "stopped_epoch": outcome.epoch
                     if outcome.status == "stopped_early" else None,
                     **outcome.settings, "evaluations": len(history), f"best_{metric}": best,
                     **finals})
    return pd.DataFrame(rows)


def log_sweep_summary(table: pd.DataFrame, searched: list[str], metric: str, mode: str,
                      title: str) -> pd.Series | None:
    """Logs to the active (parent) run the best trial (its settings as
    ``best_<setting>`` params, its best ``metric`` and final metrics as
    ``best_*`` metrics, its run id as a tag), ``trials.csv`` and the plots
    ``valid_by_setting.png`` and ``valid_by_epoch.png``; returns the best
    trial's row, or ``None`` when no trial was evaluated."""
    key = f"best_{metric}"
    evaluated = table.dropna(subset=[key])
    best = None
    if not evaluated.empty:
        best = evaluated.loc[evaluated[key].idxmax() if mode == "max" else evaluated[key].idxmin()]
        mlflow.log_params({f"best_{setting}": best[setting] for setting in searched})
        finals = {f"best_{name}": float(best[name]) for name in table.columns
                  if name.startswith("final_") and pd.notna(best[name])}
        mlflow.log_metrics({key: float(best[key]), **finals})
        mlflow.set_tag(BEST_TRIAL_TAG, best["run_id"])
    with tempfile.TemporaryDirectory() as directory:
        table.to_csv(Path(directory) / "trials.csv", index=False)
        if not evaluated.empty:
            plot_metric_by_setting(evaluated, searched, key, f"{title}: each trial's best",
                                   Path(directory) / "valid_by_setting.png")
        mlflow.log_artifacts(directory)
    log_validation_curves(dict(zip(table["trial"], table["run_id"], strict=True)),
                          metric.removeprefix("valid_"),
                          f"{title}: validation of each trial", "valid_by_epoch.png")
    return best
