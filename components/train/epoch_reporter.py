"""What a Train worker does after each epoch: print it, checkpoint it, and
report it to Ray Train's controller when a report is worth its cost."""
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

import ray.train
import torch
import torch.distributed as dist

from components.recording.tags import EPOCHS, FINAL, RESTORED_FROM, WALL_TIME
from components.train.checkpoint_reader import checkpoint_epoch, checkpoint_name
from components.train.checkpoint_writer import write_checkpoint
from plnlp_core.training.fitting import EpochResult

if TYPE_CHECKING:
    from components.train.session import RayTrainSession, TrialSession

REPORT_GAP_S = 3.0
"""Fewest seconds between two reports, but for the last epoch's and a
sweep scheduler's decision points; a checkpoint due sooner is written all
the same and goes unreported (its epochs go with the next report).

Why: in Ray 2.60 a worker's ``ray.train.report`` puts its result in a
queue of one slot, which Train's controller empties when it polls its
workers, every ``RAY_TRAIN_HEALTH_CHECK_INTERVAL_S`` (2 s). A report per
epoch therefore waits up to 2 s for the previous one to be taken, however
short the epoch (0.2 s on a GPU). Spaced beyond the poll, a report finds
the slot free and costs milliseconds. (Lowering the poll interval is a
process-wide knob of the controller that costs it CPU; it is not needed.)"""
REPORT_INTERVAL_S = 10.0
"""Seconds after which an epoch reports without a checkpoint, so that
MLflow follows the run; every report carries all the epochs since the
previous one, so MLflow still gets each epoch once."""
NO_REPORT, METRICS, SAVE, CHECKPOINT = 0, 1, 2, 3
"""What an epoch does: nothing more, report, write a checkpoint, or both
(``CHECKPOINT`` is ``SAVE | METRICS``)."""


class EpochReporter:
    """Called after every epoch on every worker. Rank 0 decides what the
    epoch does; every rank then does it, as Train pairs the ranks' reports,
    and rank 0 prints one progress line for it. The line comes after the
    epoch's checkpoint and report: a training actor's epoch that the driver
    shows is then among the reports an interrupted driver takes from it and
    logs (a line printed while its checkpoint was written once named an
    epoch that the driver's closing line said was not logged).

    Every ``checkpoint_every`` epochs since the previous checkpoint, and
    after the last epoch, each worker writes its state into the run's
    storage (Ray Train's copy), as :func:`components.train.checkpoint_reader.checkpoint_name`
    names it; from there a restarted worker goes on (see
    :func:`components.train.worker.train_worker`), whether or not Train's
    controller has taken the checkpoint's report. So a lost worker costs at
    most ``checkpoint_every`` epochs. A checkpoint is reported with its
    epoch when :data:`REPORT_GAP_S` have passed since the previous report
    (always after the last epoch); one that goes unreported is removed once
    a newer one is complete. An epoch also reports, without a checkpoint,
    when it is evaluated and reaches one of ``decision_epochs`` (a sweep
    scheduler's rungs, so that Tune decides without delay), when it is the
    first (MLflow shows the run at once), or when :data:`REPORT_INTERVAL_S`
    have passed. A session whose reports cost nothing (a training actor's,
    with no controller: ``reports_each_epoch``) reports every epoch and
    removes every superseded checkpoint itself; the run's last report is
    marked ``FINAL`` (its logger returns once MLflow holds every epoch).

    Rank 0's reports carry the epochs since the previous one (see
    :mod:`components.recording.tags`)
    for :class:`components.recording.epoch_logger.EpochLogger` and, in a sweep,
    :class:`components.sweep.reporter.SweepReporter`; its checkpoints' timing
    holds the start-up marks and when each epoch ended.

    Args:
        session (RayTrainSession or TrialSession): Where the training runs
            (see :mod:`components.train.session`): this worker's rank,
            the run's storage, and where reports go.
        epochs (int): The run's last epoch.
        checkpoint_every (int): Epochs between checkpoints.
        main_metric (str): The metric shown, e.g. ``hits_20``.
        history (list, optional): The epochs before a restart.
        decision_epochs (Collection[int]): Epochs a scheduler decides at.
        startup (dict, optional): This worker's start-up marks (see
            :mod:`components.train.startup`); the first epoch's end is added.
        epoch_ends (list, optional): When each epoch of ``history`` ended.
        label (str, optional): Heads each line, ``[label] epoch ...``: a
            sweep's trial, whose lines Ray prefixes with its actor's class.
    """

    def __init__(
        self, session: "RayTrainSession | TrialSession", epochs: int, checkpoint_every: int,
        main_metric: str, history: list[dict[str, float]] | None = None,
        decision_epochs: Collection[int] = (), startup: dict[str, float] | None = None,
        epoch_ends: list[float] | None = None, label: str | None = None,
    ) -> None:
        self.epochs = epochs
        self.checkpoint_every = checkpoint_every
        self.main_metric = main_metric
        self.session = session
        self.heading = "" if label is None else f"[{label}] "
        self.rank, self.world_size = session.rank, session.world_size
        self.history: list[dict[str, float]] = list(history or [])
        self.epoch_ends: list[float] = list(epoch_ends or [])
        # a checkpoint written before they were kept: now
        self.epoch_ends += [time.time()] * (len(self.history) - len(self.epoch_ends))
        self.decision_epochs = sorted(decision_epochs)
        self.startup = startup
        self.pending: list[dict[str, float]] = []
        self.removable: list[ray.train.Checkpoint] = []
        self.restored_from: int | None = None
        self.first_epoch = len(self.history) + 1
        self.last_reported_epoch = self.last_checkpoint_epoch = len(self.history)
        self.last_report = float("-inf")
        self.started = time.perf_counter()  # fit starts next

    def restarted(self, epoch: int, delivered: int = 0) -> None:
        """Notes that training goes on after ``epoch``, said with the next
        report, which carries again the epochs after ``delivered`` (those of
        the checkpoint Train's controller holds are in MLflow; the later
        ones' reports may have died with the worker)."""
        self.restored_from = epoch
        if self.rank != 0:
            return
        self.pending = [{**row, WALL_TIME: end}
                        for row, end in zip(self.history, self.epoch_ends, strict=True)
                        if row["epoch"] > delivered]
        print(f"{self.heading}restarting after epoch {epoch} from its checkpoint",
              file=sys.__stdout__, flush=True)

    def finish(self) -> None:
        """After the training: reports a restart that found nothing left to
        train (``--resume`` of a run whose last checkpoint is its last
        epoch's), so that the epochs its checkpoint holds and MLflow lacks
        (their reports died, or the tracking server was away) get there."""
        if self.restored_from is not None and self.history:
            self._report(self.history[-1])

    def __call__(self, result: EpochResult) -> None:
        now = time.time()
        if self.startup is not None:
            self.startup.setdefault("first_epoch", now)
        decision = self._decide(result) if self.rank == 0 else NO_REPORT
        loss, gap, decision = self._across_workers(result.train_loss, result.score_gap, decision)
        if self.rank == 0:  # the collective above follows every worker's earlier checkpoints
            self._remove_superseded()
        metrics = {"epoch": result.epoch, "train_loss": loss, "train_score_gap": gap,
                   "epoch_seconds": result.seconds, **result.metrics}
        if self.rank == 0:
            self.history.append(metrics)
            self.epoch_ends.append(now)
            self.pending.append({**metrics, WALL_TIME: now})
        checkpoint = self._save(result) if decision & SAVE else None
        if decision & METRICS:
            self._report(metrics, checkpoint)
        if self.rank == 0:
            self._print(metrics)
        if checkpoint is not None and self.rank == 0 and not (
                decision & METRICS and self.session.removes_reported_checkpoints):
            self.removable.append(checkpoint)
        self.session.after_epoch()

    def _decide(self, result: EpochResult) -> int:
        """What this epoch does (see the class)."""
        if result.epoch == self.epochs:
            return CHECKPOINT
        since = time.perf_counter() - self.last_report
        due = result.epoch - self.last_checkpoint_epoch >= self.checkpoint_every
        decides = bool(result.metrics) and any(
            self.last_reported_epoch < epoch <= result.epoch for epoch in self.decision_epochs)
        reports = self.session.reports_each_epoch or decides or since >= REPORT_INTERVAL_S \
            or (due and since >= REPORT_GAP_S)
        return (SAVE if due else NO_REPORT) | (METRICS if reports else NO_REPORT)

    def _save(self, result: EpochResult) -> ray.train.Checkpoint:
        """Writes this worker's part of the epoch's checkpoint into the run's
        storage, as Ray Train copies a reported one there."""
        with tempfile.TemporaryDirectory() as scratch:
            timing = {"fit_seconds": time.perf_counter() - self.started,
                      "startup": self.startup or {}, "epoch_ends": self.epoch_ends}
            write_checkpoint(Path(scratch), result.snapshot(), self.rank, self.history, timing)
            saved = self.session.persist(Path(scratch), checkpoint_name(result.epoch))
        self.last_checkpoint_epoch = result.epoch
        return saved

    def _remove_superseded(self) -> None:
        """Removes the checkpoints older than the latest one, but those
        Train's controller removes itself (the reported ones it supersedes)."""
        for checkpoint in list(self.removable):
            if checkpoint_epoch(checkpoint.path) < self.last_checkpoint_epoch:
                try:
                    checkpoint.filesystem.delete_dir(checkpoint.path)
                except OSError:
                    pass  # left for the run's folder to be removed with
                self.removable.remove(checkpoint)

    def _report(self, metrics: dict[str, float],
                checkpoint: ray.train.Checkpoint | None = None) -> None:
        """Reports ``metrics`` with the epochs since the last report, and
        ``checkpoint``, already in the run's storage."""
        report = {**metrics, EPOCHS: self.pending, FINAL: int(metrics["epoch"]) == self.epochs}
        if self.restored_from is not None:
            report[RESTORED_FROM] = self.restored_from
        self.session.report(report, checkpoint)
        self.pending, self.restored_from = [], None
        self.last_reported_epoch, self.last_report = int(metrics["epoch"]), time.perf_counter()

    def _across_workers(self, loss: float, gap: float, decision: int) -> tuple[float, float, int]:
        """The loss and score gap averaged over the workers, and rank 0's
        decision (the others pass ``NO_REPORT``), in one collective."""
        if self.world_size == 1:
            return loss, gap, decision
        total = torch.tensor([loss, gap, decision], dtype=torch.float64,
                             device=self.session.device())
        dist.all_reduce(total)  # on the workers' device: NCCL takes no CPU tensors
        loss, gap, decision = total.tolist()
        return loss / self.world_size, gap / self.world_size, int(decision)

    def _print(self, metrics: dict[str, float]) -> None:
        """``epoch 12/500  loss 0.41234  valid_hits_20 0.6123  test_hits_20
        0.5871  2.4 s  ETA 19m32s``: the ETA from the mean wall time of this
        attempt's epochs, evaluations and checkpoints included."""
        epoch = int(metrics["epoch"])
        keys = (f"valid_{self.main_metric}", f"test_{self.main_metric}")
        shown = [f"{key} {metrics[key]:.4f}" for key in keys if key in metrics]
        per_epoch = (time.perf_counter() - self.started) / (epoch - self.first_epoch + 1)
        line = "  ".join([f"epoch {epoch}/{self.epochs}", f"loss {metrics['train_loss']:.5f}",
                          *shown, _seconds(metrics["epoch_seconds"]),
                          f"ETA {_duration(per_epoch * (self.epochs - epoch))}"])
        # Ray Train tees a plain print to stdout and its logger; write once.
        print(self.heading + line, file=sys.__stdout__, flush=True)


def _seconds(seconds: float) -> str:
    """``2.4 s``, or ``35 ms`` below a second (a small graph's epochs)."""
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"


def _duration(seconds: float) -> str:
    """``42s``, ``19m32s`` or ``3h05m``."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes \
        else f"{secs}s"
