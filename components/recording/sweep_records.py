"""MLflow records of a sweep: one child run per trial under the sweep's
parent run, which records how the trial ended as it ends and is closed
accordingly (FINISHED, FINISHED tagged ``stopped_early`` with the epoch, or
FAILED with the reason), and the parent's summary: the best trial, a table
of every trial and the plots. An interrupted sweep keeps the trials that
ended (see :func:`recorded_outcomes`), and a resumed one goes on with the
others."""
import contextlib
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import mlflow
import pandas as pd
from mlflow.entities import Run
from mlflow.tracking import MlflowClient
from ray import tune

from components.recording.metric_names import logged_metrics, run_metrics
from components.recording.plots import plot_metric_by_setting
from components.recording.reads import child_runs
from components.recording.run_records import log_validation_curves
from components.recording.tags import (
    BEST_TRIAL_TAG,
    CHECKPOINTS_TAG,
    DESCRIPTION_TAG,
    EPOCH,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    OUTCOME_TAG,
    STOPPED_EARLY_TAG,
    TRIAL_TAG,
)
from components.storage.location import Location
from plnlp_core.parts.import_path import is_import_path

REASON_CHARS = 2000  # of a failed trial's reason, kept with its outcome


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

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "reason": (self.reason or "")[:REASON_CHARS] or None},
                          default=lambda value: value.item())  # numpy scalars Tune sampled

    @classmethod
    def from_json(cls, text: str) -> "TrialOutcome":
        return cls(**json.loads(text))


def trial_run_name(settings: dict) -> str:
    """A trial's run name: its sampled settings, e.g. ``loss=auc-num_neg=3``,
    so that the runs table tells trials apart at a glance; a part of one's
    own by its class's name (``encoder=GINLayer``)."""
    parts = [f"{key}={value:.4g}" if isinstance(value, float)
             else f"{key}={value.partition(':')[2]}" if is_import_path(value)
             else f"{key}={value}" for key, value in sorted(settings.items())]
    return "-".join(parts)[:250] or "trial"


class TrialOutcomes(tune.Callback):
    """Records each trial's :class:`TrialOutcome` on its child run (see
    :func:`record_outcome`) and prints one line as each trial ends (Tune's
    own tables stay off the console unless ``--verbose``). Runs on the
    sweep's driver; a restored sweep runs the copy Tune saved with its state.

    Args:
        describe (Callable): Turns a trial's error into its one-line reason.
        metric (str): The validation metric trials are compared by.
        parent_run_id (str): The sweep's run.
        log_settings (Callable): Logs a trial's settings to the run opened
            for a trial that failed before opening its own.
    """

    def __init__(self, describe: Callable[[BaseException], str], metric: str,
                 parent_run_id: str, log_settings: Callable[[dict], None]) -> None:
        self.describe = describe
        self.metric = metric
        self.parent_run_id = parent_run_id
        self.log_settings = log_settings

    def on_trial_complete(self, iteration: int, trials: list, trial: tune.experiment.Trial,
                          **info: object) -> None:
        last = trial.last_result
        completed = any(key.startswith("final_") for key in last)
        self._record(trial, "completed" if completed else "stopped_early", last.get(EPOCH))

    def on_trial_error(self, iteration: int, trials: list, trial: tune.experiment.Trial,
                       **info: object) -> None:
        error = trial.get_error()  # Tune keeps some failures as text (one of its callbacks')
        reason = self.describe(error) if isinstance(error, BaseException) \
            else str(error or "the trial failed")
        self._record(trial, "failed", trial.last_result.get(EPOCH), reason)

    def _record(self, trial: tune.experiment.Trial, status: str, epoch: int | None,
                reason: str | None = None) -> None:
        outcome = TrialOutcome(trial.trial_id, str(trial), dict(trial.config), status, epoch,
                               reason)
        record_outcome(self.parent_run_id, outcome, self.log_settings)
        value = trial.last_result.get(self.metric)
        result = reason if reason else (f"{self.metric} {value:.4f}" if value is not None
                                         else "not evaluated")
        print(f"trial {trial_run_name(outcome.settings)} {status.replace('_', ' ')} at epoch "
              f"{epoch if epoch is not None else 0}: {result}", flush=True)


def record_outcome(parent_run_id: str, outcome: TrialOutcome,
                   log_settings: Callable[[dict], None]) -> None:
    """Tags the trial's child run with ``outcome`` (a trial that failed
    before opening one gets one, logged by ``log_settings``); the run is
    closed later, by :func:`close_trial_runs`, once the trial's process has
    let go of it."""
    run = trial_runs(parent_run_id).get(outcome.trial_id) \
        or _open_failed_trial_run(parent_run_id, outcome, log_settings)
    MlflowClient().set_tag(run.info.run_id, OUTCOME_TAG, outcome.to_json())


def recorded_outcomes(parent_run_id: str) -> dict[str, tuple[TrialOutcome, Run]]:
    """The trials of the sweep that ended, in the order Tune named them:
    each one's outcome and child run. A trial an interrupt stopped has none."""
    runs = trial_runs(parent_run_id).values()
    ended = [(TrialOutcome.from_json(run.data.tags[OUTCOME_TAG]), run) for run in runs
             if OUTCOME_TAG in run.data.tags]
    return {outcome.trial_id: (outcome, run)
            for outcome, run in sorted(ended, key=lambda pair: pair[0].trial_name)}


def unfinished_trial_run(parent_run_id: str, trial_id: str) -> str | None:
    """The child run of ``trial_id`` that an interrupt stopped (it has no
    outcome), which the trial of a resumed sweep goes on in."""
    run = trial_runs(parent_run_id).get(trial_id)
    return run.info.run_id if run is not None and OUTCOME_TAG not in run.data.tags else None


@contextlib.contextmanager
def killed_with_its_sweep(parent_run_id: str) -> Iterator[None]:
    """Around a trial's active run: an error that ends the block after the
    sweep's run ``parent_run_id`` was marked KILLED (an interrupt of the
    sweep, whose Ray ends under the trial) ends the trial's run KILLED, as
    the interrupt marked it, not FAILED, as the error would when it leaves
    the run's ``with`` block after that marking; the error is raised."""
    try:
        yield
    except BaseException:
        sweep = MlflowClient().get_run(parent_run_id)
        if sweep.info.status == "KILLED":
            if FAILURE_TAG in sweep.data.tags:
                mlflow.set_tag(FAILURE_TAG, sweep.data.tags[FAILURE_TAG])
            mlflow.end_run(status="KILLED")
        raise


def close_trial_runs(parent_run_id: str) -> tuple[dict[str, TrialOutcome], dict[str, str]]:
    """Ends the child run of every trial that ended as its trial did (a run
    that an interrupt stopped and the resumed sweep finished loses the
    interrupt's tags), removes the checkpoints a stopped trial left, and
    returns the trials' outcomes and run ids."""
    client = MlflowClient()
    outcomes, run_ids = {}, {}
    for trial_id, (outcome, run) in recorded_outcomes(parent_run_id).items():
        run_id, tags = run.info.run_id, run.data.tags
        status = "FAILED" if outcome.status == "failed" else "FINISHED"
        if outcome.status == "failed":
            client.set_tag(run_id, FAILURE_TAG, (outcome.reason or "")[:5000])
        else:  # a run an interrupt stopped, which the resumed sweep finished
            for tag in {FAILURE_TAG, INTERRUPTED_TAG} & tags.keys():
                client.delete_tag(run_id, tag)
        if outcome.status == "stopped_early":
            client.set_tag(run_id, STOPPED_EARLY_TAG, str(outcome.epoch))
        if run.info.status != status:
            client.set_terminated(run_id, status)
        if CHECKPOINTS_TAG in tags:  # left by a trial that did not finish
            Location(tags[CHECKPOINTS_TAG]).remove()  # a tag holds the URI
            client.delete_tag(run_id, CHECKPOINTS_TAG)
        outcomes[trial_id], run_ids[trial_id] = outcome, run_id
    return outcomes, run_ids


def trial_runs(parent_run_id: str) -> dict[str, Run]:
    """The sweep's child runs, by their trial's id."""
    return {run.data.tags[TRIAL_TAG]: run for run in child_runs(parent_run_id)
            if TRIAL_TAG in run.data.tags}


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
    """One row per trial: its name (its run's, :func:`trial_run_name`; a
    repeated one numbered ``#2``, ``#3``...), its run, how it ended, its
    searched settings, its best ``metric`` over the evaluated epochs and its
    final metrics."""
    client = MlflowClient()
    rows, seen = [], Counter()
    for trial_id, outcome in outcomes.items():
        name = trial_run_name(outcome.settings)
        seen[name] += 1
        run = client.get_run(run_ids[trial_id])
        history = [m.value for m in client.get_metric_history(run.info.run_id, metric)]
        best = (max if mode == "max" else min)(history) if history else float("nan")
        finals = {k: v for k, v in run_metrics(run.data.metrics).items()
                  if k.startswith("final_")}
        rows.append({"trial": name if seen[name] == 1 else f"{name} #{seen[name]}",
                     "run_id": run.info.run_id,
                     "status": outcome.status, "stopped_epoch": outcome.epoch
                     if outcome.status == "stopped_early" else None,
                     **outcome.settings, "evaluations": len(history), f"best_{metric}": best,
                     **finals})
    return pd.DataFrame(rows)


def log_sweep_summary(table: pd.DataFrame, searched: list[str], metric: str, mode: str,
                      title: str, finished: bool = True) -> pd.Series | None:
    """Logs to the active (parent) run the best trial (its best ``metric``
    and final metrics as ``best_*`` metrics, NaN for those a trial stopped
    early lacks, its run id as a tag, its settings as ``best_<setting>``
    params, or tags until the sweep has ``finished``: a resumed sweep may
    find a better trial, and MLflow's params never change), ``trials.csv``
    and the plots ``valid_by_setting.png`` and ``valid_by_epoch.png``;
    returns the best trial's row, or ``None`` when no trial was evaluated."""
    key = f"best_{metric}"
    evaluated = table.dropna(subset=[key])
    best = None
    if not evaluated.empty:
        best = evaluated.loc[evaluated[key].idxmax() if mode == "max" else evaluated[key].idxmin()]
        _log_best_settings({f"best_{setting}": best[setting] for setting in searched}, finished)
        finals = {f"best_{name}": float(best[name]) for name in table.columns
                  if name.startswith("final_")}
        mlflow.log_metrics(logged_metrics({key: float(best[key]), **finals}))
        mlflow.set_tag(BEST_TRIAL_TAG, best["run_id"])
    mlflow.set_tag(DESCRIPTION_TAG, sweep_description(table, metric, mode))
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


def sweep_description(table: pd.DataFrame, metric: str, mode: str) -> str:
    """What MLflow's page of the sweep's parent run shows first, in
    Markdown: the best trial by its best ``metric`` and how many trials
    ended how, then every trial, best first, with how it ended."""
    key = f"best_{metric}"
    ranked = table.sort_values(key, ascending=mode == "min", na_position="last")
    endings = ", ".join(f"{count} {status.replace('_', ' ')}"
                        for status, count in ranked["status"].value_counts(sort=False).items())
    lines = [f"{len(table)} trials: {endings}.", "",
             "| trial | best " + f"`{metric}` | ended | run |", "| --- | --- | --- | --- |"]
    evaluated = ranked.dropna(subset=[key])
    if not evaluated.empty:
        top = evaluated.iloc[0]
        lines[:0] = [f"Best `{metric}` **{top[key]:.4f}** by trial `{top['trial']}`.", ""]
    for _, row in ranked.iterrows():
        score = "" if pd.isna(row[key]) else f"{row[key]:.4f}"
        lines.append(f"| `{row['trial']}` | {score} | {row['status'].replace('_', ' ')} "
                     f"| {row['run_id']} |")
    return "\n".join(lines)


def _log_best_settings(settings: dict[str, object], finished: bool) -> None:
    """The best trial's settings: tags while the sweep may go on, then params."""
    if not finished:
        mlflow.set_tags(settings)
        return
    mlflow.log_params(settings)
    interim = mlflow.get_run(mlflow.active_run().info.run_id).data.tags.keys() & settings.keys()
    for tag in interim:
        mlflow.delete_tag(tag)
