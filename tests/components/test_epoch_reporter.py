"""When a Train worker checkpoints and reports: a checkpoint every
``checkpoint_every`` epochs, never an epoch's wait on Ray Train's poll."""
import json
import threading
from pathlib import Path

import pytest
import ray.train
import torch
from pyarrow.fs import LocalFileSystem

import components.train.epoch_reporter as reporting
from components.recording.tags import EPOCHS, FINAL, RESTORED_FROM
from components.storage.location import Location
from components.train.checkpoint_reader import checkpoint_name, stored_checkpoints
from components.train.checkpoint_writer import write_checkpoint
from components.train.epoch_reporter import (
    CHECKPOINT,
    METRICS,
    NO_REPORT,
    SAVE,
    EpochReporter,
    _seconds,
)
from components.train.session import TrialSession, TrialStopped
from plnlp_core.training.fit_state import FitState
from plnlp_core.training.fitting import EpochResult


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(reporting.time, "perf_counter", clock)
    return clock


class ControllerSession(TrialSession):
    """A worker whose reports go to Ray Train's controller (as a
    :class:`~components.train.session.RayTrainSession`'s do): spaced, and
    the reported checkpoints the controller's to remove."""

    reports_each_epoch = False
    removes_reported_checkpoints = True


def reporter(checkpoint_every: int, decision_epochs=(), session=None) -> EpochReporter:
    session = session or ControllerSession(Location("/nonexistent"), [], False, threading.Event())
    return EpochReporter(session, epochs=50, checkpoint_every=checkpoint_every,
                         main_metric="hits_20", decision_epochs=decision_epochs)


def epoch(number: int, evaluated: bool = True) -> EpochResult:
    return EpochResult(number, 0.5, 0.2, metrics={"valid_hits_20": 0.1} if evaluated else {})


def reported(at: EpochReporter, number: int, clock: Clock) -> None:
    at.last_report, at.last_reported_epoch = clock.now, number


def test_a_due_checkpoint_is_written_at_once_and_reported_only_beyond_the_gap(clock):
    every_other = reporter(checkpoint_every=2)
    assert every_other._decide(epoch(1)) == METRICS  # the first epoch shows at once
    reported(every_other, 1, clock)
    clock.now += 0.2
    assert every_other._decide(epoch(2)) == SAVE  # due 0.2 s after the last report
    every_other.last_checkpoint_epoch = 2
    clock.now += 0.2
    assert every_other._decide(epoch(3)) == NO_REPORT
    clock.now += reporting.REPORT_GAP_S
    assert every_other._decide(epoch(4)) == CHECKPOINT
    assert every_other._decide(epoch(50)) == CHECKPOINT


def test_without_a_checkpoint_an_epoch_reports_every_interval(clock):
    rarely = reporter(checkpoint_every=25)
    assert rarely._decide(epoch(1)) == METRICS
    reported(rarely, 1, clock)
    clock.now += reporting.REPORT_INTERVAL_S - 0.1
    assert rarely._decide(epoch(2)) == NO_REPORT
    clock.now += 0.1
    assert rarely._decide(epoch(3)) == METRICS


def test_a_schedulers_rung_reports_at_once_when_evaluated(clock):
    sweep = reporter(checkpoint_every=25, decision_epochs=[4, 8])
    reported(sweep, 3, clock)
    assert sweep._decide(epoch(4, evaluated=False)) == NO_REPORT
    assert sweep._decide(epoch(5)) == METRICS  # the first evaluation at or past the rung
    reported(sweep, 5, clock)
    assert sweep._decide(epoch(6)) == NO_REPORT


def test_a_sweep_trials_epoch_line_names_the_trial(clock, capfd):
    session = TrialSession(Location("/nonexistent"), [], False, threading.Event())
    trial = EpochReporter(session, epochs=4, checkpoint_every=25, main_metric="hits_20",
                          label="lr=0.05-num_neg=3")
    trial._print({"epoch": 2, "train_loss": 0.5, "epoch_seconds": 0.2, "valid_hits_20": 0.1})
    trial.restarted(2)
    lines = capfd.readouterr().out.splitlines()
    assert lines[0].startswith("[lr=0.05-num_neg=3] epoch 2/4  loss 0.50000  valid_hits_20 0.1")
    assert lines[1] == "[lr=0.05-num_neg=3] restarting after epoch 2 from its checkpoint"
    reporter(checkpoint_every=25)._print({"epoch": 1, "train_loss": 0.5, "epoch_seconds": 0.2})
    assert capfd.readouterr().out.startswith("epoch 1/50  loss")  # a run's: no heading


def test_epoch_seconds_read_in_milliseconds_below_one_second():
    assert _seconds(0.035) == "35 ms" and _seconds(2.44) == "2.4 s"


def fit_state(epoch: int) -> FitState:
    return FitState(epoch=epoch, model={"w": torch.full((3,), float(epoch))}, optimizer={},
                    schedule=None, rng={"sampler": torch.zeros(2)}, sampler={}, best_epoch=0,
                    best_metrics={}, best_state=None)


class Recorder(ray.train.UserCallback):
    """What Ray Train's controller receives: the metrics, and the checkpoint's folder."""

    def __init__(self) -> None:
        self.reports: list[dict] = []

    def after_report(self, run_context, metrics, checkpoint) -> None:
        self.reports.append({**metrics[0], "checkpoint": checkpoint and Path(checkpoint.path).name})


@pytest.fixture
def session(tmp_path: Path) -> TrialSession:
    """A Train worker, its storage under ``tmp_path``."""
    return ControllerSession(Location(tmp_path), [Recorder()], use_gpu=False,
                             stop=threading.Event())


@pytest.fixture
def alone(tmp_path: Path) -> TrialSession:
    """A worker training alone in its actor, its storage under ``tmp_path``."""
    return TrialSession(Location(tmp_path), [Recorder()], use_gpu=False, stop=threading.Event())


@pytest.fixture
def train_run(session: TrialSession, clock: Clock) -> list[dict]:
    """The reports the worker's ``session`` receives."""
    return session.callbacks[0].reports


def run_epochs(at: EpochReporter, epochs: range, clock: Clock, seconds: float) -> None:
    for number in epochs:
        clock.now += seconds
        at(EpochResult(number, 1.0 / number, seconds, snapshot=lambda n=number: fit_state(n)))


def test_every_checkpoint_every_th_epoch_is_in_storage_whether_reported_or_not(
        tmp_path, clock, session, train_run, capsys):
    every_other = reporter(checkpoint_every=2, session=session)
    every_other.epochs = 12
    run_epochs(every_other, range(1, 10), clock, seconds=0.4)
    # epochs 2, 4, 6 and 8 ended within 3 s of epoch 1's report: written, not reported;
    # each went once the next was complete
    assert [(r["epoch"], r["checkpoint"]) for r in train_run] == [(1, None)]
    stored = stored_checkpoints(LocalFileSystem(), str(tmp_path), world_size=1)
    assert [(c.epoch, c.complete) for c in stored] == [(8, True)]
    run_epochs(every_other, range(10, 13), clock, seconds=0.4)
    assert [(r["epoch"], r["checkpoint"]) for r in train_run] == [
        (1, None), (10, checkpoint_name(10)), (12, checkpoint_name(12))]
    assert [row["epoch"] for r in train_run for row in r[EPOCHS]] == list(range(1, 13))


def test_a_worker_alone_reports_every_epoch_and_keeps_only_its_newest_checkpoint(
        tmp_path, clock, alone, capsys):
    every_other = reporter(checkpoint_every=2, session=alone)
    every_other.epochs = 7
    run_epochs(every_other, range(1, 8), clock, seconds=0.1)
    reports = alone.callbacks[0].reports
    assert [[row["epoch"] for row in r[EPOCHS]] for r in reports] == [[e] for e in range(1, 8)]
    assert [r[FINAL] for r in reports] == [False] * 6 + [True]
    assert [r["checkpoint"] for r in reports if r["checkpoint"]] == [
        checkpoint_name(e) for e in (2, 4, 6, 7)]
    stored = stored_checkpoints(LocalFileSystem(), str(tmp_path), world_size=1)
    assert sorted(c.epoch for c in stored) == [6, 7]  # 6 goes at the call after 7



def test_an_epochs_line_comes_once_its_checkpoint_is_stored_and_its_report_made(
        tmp_path, clock, alone, capfd):
    """An interrupted driver logs the reports its training actor made: a
    line printed before the report (while the checkpoint was written) once
    named an epoch the run's closing line said was not logged."""
    seen = []  # at each print: the reports made and the checkpoints stored
    every = reporter(checkpoint_every=1, session=alone)
    every.epochs = 3
    printing = every._print

    def print_after(metrics: dict) -> None:
        stored = stored_checkpoints(LocalFileSystem(), str(tmp_path), world_size=1)
        seen.append((len(alone.callbacks[0].reports), sorted(c.epoch for c in stored)))
        printing(metrics)

    every._print = print_after
    run_epochs(every, range(1, 4), clock, seconds=0.1)
    assert seen == [(1, [1]), (2, [1, 2]), (3, [2, 3])]
    assert [line.split("  ")[0] for line in capfd.readouterr().out.splitlines()] == [
        "epoch 1/3", "epoch 2/3", "epoch 3/3"]

def test_a_restart_with_nothing_left_to_train_reports_what_its_checkpoint_holds(
        clock, alone, capsys):
    history = [{"epoch": e, "train_loss": 1.0} for e in range(1, 6)]
    ended = EpochReporter(alone, epochs=5, checkpoint_every=2, main_metric="hits_20",
                          history=history, epoch_ends=[float(e) for e in range(5)])
    ended.restarted(5)
    ended.finish()
    (report,) = alone.callbacks[0].reports
    assert [row["epoch"] for row in report[EPOCHS]] == [1, 2, 3, 4, 5]
    assert report[FINAL] and report[RESTORED_FROM] == 5
    reporter(checkpoint_every=2, session=alone).finish()  # no restart: nothing more
    assert len(alone.callbacks[0].reports) == 1


def test_a_restart_reports_again_the_epochs_after_the_controllers_checkpoint(
        clock, session, train_run, capsys):
    history = [{"epoch": e, "train_loss": 1.0} for e in range(1, 7)]
    again = EpochReporter(session, epochs=50, checkpoint_every=2, main_metric="hits_20",
                          history=history, epoch_ends=[float(e) for e in range(6)])
    again.restarted(6, delivered=2)
    run_epochs(again, range(7, 8), clock, seconds=0.4)
    assert [row["epoch"] for row in train_run[0][EPOCHS]] == [3, 4, 5, 6, 7]
    assert train_run[0][RESTORED_FROM] == 6


def test_a_trial_training_alone_stops_after_the_epoch_during_which_tune_stopped_it(
        clock, session, train_run, capsys):
    alone = reporter(checkpoint_every=2, session=session)
    run_epochs(alone, range(1, 3), clock, seconds=0.4)
    session.stop.set()
    with pytest.raises(TrialStopped):
        run_epochs(alone, range(3, 4), clock, seconds=0.4)
    assert [row["epoch"] for row in alone.history] == [1, 2, 3]


def test_a_checkpoint_counts_once_every_worker_copied_all_it_listed(tmp_path):
    for epoch in (2, 4, 6):
        folder = tmp_path / checkpoint_name(epoch)
        folder.mkdir()
        for rank in (0, 1):
            write_checkpoint(folder, fit_state(epoch), rank, [{"epoch": epoch}], {})
    cut = tmp_path / checkpoint_name(6) / "state.pt"
    cut.write_bytes(cut.read_bytes()[:-1])  # a copy cut short by a dying worker
    (tmp_path / checkpoint_name(4) / "files-1.json").unlink()  # worker 1's copy never ended
    (tmp_path / "checkpoint_2026-11-27_19-06-54.143023").mkdir()  # not this layout's
    stored = stored_checkpoints(LocalFileSystem(), str(tmp_path), world_size=2)
    assert [(c.epoch, c.complete) for c in stored] == [(6, False), (4, False), (2, True)]
    listed = json.loads((tmp_path / checkpoint_name(2) / "files-0.json").read_text())
    assert "state.pt" in listed and "history.json" in listed
