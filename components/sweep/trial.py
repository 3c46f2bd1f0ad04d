"""A sweep's trial: the Ray Tune trainable that trains and evaluates one
sampled config as a child MLflow run of the sweep's run, one Tune step per
evaluated epoch; a trial an interrupt stopped goes on in its run, from its
latest checkpoint, when the sweep is resumed."""
import contextlib
import queue
import threading

import ray
import ray.train
from ray import tune
from ray.util.queue import Queue

from components.artifacts import DatasetArtifact
from components.recording.run_lifecycle import ActiveRun, start_run, use_tracking_uri
from components.recording.run_records import log_config
from components.recording.sweep_records import (
    killed_with_its_sweep,
    trial_run_name,
    unfinished_trial_run,
)
from components.recording.tags import TRIAL_TAG
from components.sweep.reporter import CONTROLLER, EPOCH, SweepReporter
from components.train_and_evaluate import train_and_evaluate
from plnlp_core.config import PLNLPConfig

ABORT_WAIT_S = 60


class SweepTrial(tune.Trainable):
    """Trains ``base`` with the sampled settings (``config``) in a thread, in
    a child run of ``options["parent_run_id"]`` tagged with the trial's id
    (the run an interrupt stopped, if any: training goes on from its
    checkpoint, see :func:`components.train.stage.train`); each :meth:`step`
    returns the next evaluated epoch, the last the final metrics. When Tune
    stops the trial (its scheduler, or the sweep's end), :meth:`cleanup`
    aborts the Ray Train run, which gives its workers' CPUs and GPUs back
    before the trial's process ends. A trial of one worker trains in this
    actor instead, which holds its resources (see
    :mod:`components.train.trial_training`): :meth:`cleanup` then stops
    it after its current epoch.

    ``options`` holds ``tracking_uri``, ``experiment_id``, ``parent_run_id``,
    ``metric`` (the validation metric compared), ``workers`` (a
    :class:`components.train.worker_group.WorkerGroup`), ``checkpoints`` (a
    :class:`~components.storage.location.Location`), ``max_failures`` and
    ``decision_epochs`` (the scheduler's rungs).
    """

    def setup(self, config: dict, base: dict, dataset: DatasetArtifact,
              options: dict) -> None:
        self.base, self.dataset, self.options = base, dataset, options
        self._start(config)

    def reset_config(self, new_config: dict) -> bool:
        """Takes the next trial in this actor (Tune's ``reuse_actors``): a
        new process would import torch, PyG and MLflow again. Stops what
        the previous trial left running first (one its scheduler stopped)."""
        self.cleanup()
        self._start(new_config)
        return True

    def _start(self, config: dict) -> None:
        """Starts training the sampled settings ``config``."""
        options = self.options
        self.settings = PLNLPConfig.from_mapping({**self.base, **config})
        self.sampled = config
        self.alone = options["workers"].num_workers == 1
        self.stop = threading.Event()
        self.reports = queue.Queue() if self.alone else Queue(actor_options={"num_cpus": 0})
        self.controller = None
        self.taken = False  # a report step returned, which Tune has not yet decided on
        self.final: dict[str, float] | None = None
        self.error: BaseException | None = None
        self.training = threading.Thread(target=self._train, args=(self.dataset,), daemon=True)
        self.training.start()

    def _train(self, dataset: DatasetArtifact) -> None:
        options, config = self.options, self.settings
        reporters = [SweepReporter(self.reports, options["metric"], config.epochs,
                                   announce=not self.alone)]
        if self.alone:
            reporters.append(AwaitDecision(self.reports, self.stop))
        try:
            use_tracking_uri(options["tracking_uri"])
            with self._trial_run() as run, killed_with_its_sweep(options["parent_run_id"]):
                if not run.data.params:  # a new run: one going on holds its settings
                    log_config(config, options["params"])
                self.final = train_and_evaluate(
                    dataset, config, options["workers"], options["checkpoints"],
                    options["max_failures"], reporters, options.get("decision_epochs", ()),
                    self.stop if self.alone else None, options.get("heart"),
                    trial_run_name(self.sampled))
        except BaseException as error:  # re-raised by step, which Tune watches
            self.error = error

    def _trial_run(self) -> ActiveRun:
        """The trial's child run: the one an interrupt stopped, else a new one."""
        options = self.options
        stopped = unfinished_trial_run(options["parent_run_id"], self.trial_id)
        if stopped is not None:
            return start_run(run_id=stopped)
        return start_run(experiment_id=options["experiment_id"],
                         parent_run_id=options["parent_run_id"],
                         run_name=trial_run_name(self.sampled), tags={TRIAL_TAG: self.trial_id})

    def step(self) -> dict:
        """The next evaluated epoch's metrics, or the final ones (``done``).
        Being called again means Tune let the trial go on past the last."""
        if self.taken:
            self.taken = False
            self.reports.task_done()
        while (report := self._next_report()) is not None or self.training.is_alive():
            if report is None:
                continue
            if CONTROLLER not in report:
                self.taken = self.alone
                return report
            self.controller = report[CONTROLLER]
        if self.error is not None:
            raise self.error
        metric = self.options["metric"]
        return {**self.final, metric: self.final[f"final_{metric}"],
                EPOCH: self.settings.epochs, "done": True}

    def _next_report(self) -> dict | None:
        try:
            return self.reports.get(timeout=1)
        except queue.Empty:  # ray.util.queue's Empty too
            return None

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        """Nothing for Tune to keep: the training writes its own checkpoints
        into the run's storage, where a restarted trial finds them."""
        return None

    def load_checkpoint(self, checkpoint: object) -> None:
        """Nothing to restore: the training goes on from the newest
        checkpoint in the run's storage by itself (Tune restores a trial it
        restarts, or a resumed sweep's, from the empty one it saved)."""

    def cleanup(self) -> None:
        """Stops the training if it still runs (a trial training alone after
        its epoch; else its controller aborts and removes the workers'
        placement group), then waits for the thread to end."""
        self.stop.set()
        if self.alone:
            _release(self.reports)
        if self.training.is_alive() and self.controller is not None:
            try:
                ray.get(self.controller.abort.remote(), timeout=ABORT_WAIT_S)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                pass  # the controller exits as it aborts
        self.training.join(ABORT_WAIT_S)


class AwaitDecision(ray.train.UserCallback):
    """Holds a trial that trains alone after each report until Tune has
    taken every epoch the report passed on and asked for the next step (or
    stopped the trial), so that it trains no epoch past the one its
    scheduler stopped it at: a Train worker group is aborted by its
    controller, but a trial's own thread would go on meanwhile.

    Args:
        reports (queue.Queue): The trial's queue (each epoch taken is ``task_done``).
        stop (threading.Event): Set when Tune stops the trial.
    """

    def __init__(self, reports: queue.Queue, stop: threading.Event) -> None:
        self.reports = reports
        self.stop = stop

    def after_report(self, run_context: object, metrics: list[dict],
                     checkpoint: ray.train.Checkpoint | None) -> None:
        if not self.stop.is_set():  # set before the queue is released: no wait is missed
            self.reports.join()


def _release(reports: queue.Queue) -> None:
    """Marks every epoch put on ``reports`` as decided."""
    with contextlib.suppress(ValueError):  # every one is
        while True:
            reports.task_done()
