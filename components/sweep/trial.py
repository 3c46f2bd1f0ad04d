"""A sweep's trial: the Ray Tune trainable that trains and evaluates one
sampled config as a child MLflow run of the sweep's run, one Tune step per
evaluated epoch; a trial an interrupt stopped goes on in its run, from its
latest checkpoint, when the sweep is resumed."""
import threading

import mlflow
import ray
from ray import tune
from ray.util.queue import Empty, Queue

from components.artifacts import DatasetArtifact
from components.recording.runs import start_run
from components.recording.sweep_tracking import TRIAL_TAG, trial_run_name, unfinished_trial_run
from components.recording.tracking import log_config
from components.sweep.reporter import CONTROLLER, EPOCH, SweepReporter
from components.train_and_evaluate import train_and_evaluate
from plnlp_core.config import PLNLPConfig

ABORT_WAIT_S = 60


class SweepTrial(tune.Trainable):
    """Trains ``base`` with the sampled settings (``config``) in a thread, in
    a child run of ``options["parent_run_id"]`` tagged with the trial's id
    (the run an interrupt stopped, if any: training goes on from its
    checkpoint, see :func:`components.train.train`); each :meth:`step`
    returns the next evaluated epoch, the last the final metrics. When Tune
    stops the trial (its scheduler, or the sweep's end), :meth:`cleanup`
    aborts the Ray Train run, which gives its workers' CPUs and GPUs back
    before the trial's process ends.

    ``options`` holds ``tracking_uri``, ``experiment_id``, ``parent_run_id``,
    ``metric`` (the validation metric compared), ``workers`` (a
    :class:`components.training.workers.WorkerGroup`), ``checkpoints`` (a folder),
    ``max_failures`` and ``decision_epochs`` (the scheduler's rungs).
    """

    def setup(self, config: dict, base: dict, dataset: DatasetArtifact,
              options: dict) -> None:
        self.settings = PLNLPConfig.from_mapping({**base, **config})
        self.sampled = config
        self.options = options
        self.reports = Queue(actor_options={"num_cpus": 0})
        self.controller = None
        self.final: dict[str, float] | None = None
        self.error: BaseException | None = None
        self.training = threading.Thread(target=self._train, args=(dataset,), daemon=True)
        self.training.start()

    def _train(self, dataset: DatasetArtifact) -> None:
        options, config = self.options, self.settings
        reporter = SweepReporter(self.reports, options["metric"], config.epochs)
        try:
            mlflow.set_tracking_uri(options["tracking_uri"])
            with self._trial_run() as run:
                if not run.data.params:  # a new run: one going on holds its settings
                    log_config(config, options["params"])
                self.final = train_and_evaluate(
                    dataset, config, options["workers"], options["checkpoints"],
                    options["max_failures"], [reporter], options.get("decision_epochs", ()))
        except BaseException as error:  # re-raised by step, which Tune watches
            self.error = error

    def _trial_run(self) -> mlflow.ActiveRun:
        """The trial's child run: the one an interrupt stopped, else a new one."""
        options = self.options
        stopped = unfinished_trial_run(options["parent_run_id"], self.trial_id)
        if stopped is not None:
            return start_run(run_id=stopped)
        return start_run(experiment_id=options["experiment_id"],
                         parent_run_id=options["parent_run_id"],
                         run_name=trial_run_name(self.sampled), tags={TRIAL_TAG: self.trial_id})

    def step(self) -> dict:
        """The next evaluated epoch's metrics, or the final ones (``done``)."""
        while (report := self._next_report()) is not None or self.training.is_alive():
            if report is None:
                continue
            if CONTROLLER not in report:
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
        except Empty:
            return None

    def save_checkpoint(self, checkpoint_dir: str) -> None:
        """Nothing for Tune to keep: the training checkpoints are the Train run's."""
        return None

    def cleanup(self) -> None:
        """Aborts the training if it still runs (its controller removes the
        workers' placement group), then waits for the thread to end."""
        if self.training.is_alive() and self.controller is not None:
            try:
                ray.get(self.controller.abort.remote(), timeout=ABORT_WAIT_S)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                pass  # the controller exits as it aborts
            self.training.join(ABORT_WAIT_S)
