"""When a Train worker reports: never an epoch's wait on Ray Train's poll."""
import pytest

import components.epoch_reporter as reporting
from components.epoch_reporter import CHECKPOINT, METRICS, NO_REPORT, EpochReporter, _seconds
from plnlp_core.fitting import EpochResult


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


def reporter(checkpoint_every: int, decision_epochs=()) -> EpochReporter:
    return EpochReporter(epochs=50, checkpoint_every=checkpoint_every, main_metric="hits_20",
                         rank=0, world_size=1, decision_epochs=decision_epochs)


def epoch(number: int, evaluated: bool = True) -> EpochResult:
    return EpochResult(number, 0.5, 0.2, metrics={"valid_hits_20": 0.1} if evaluated else {})


def reported(at: EpochReporter, number: int, clock: Clock) -> None:
    at.last_report, at.last_reported_epoch = clock.now, number


def test_checkpoints_due_within_the_gap_wait_for_it_and_the_last_epoch_always_reports(clock):
    every_epoch = reporter(checkpoint_every=1)
    assert every_epoch._decide(epoch(1)) == CHECKPOINT  # the first epoch shows at once
    reported(every_epoch, 1, clock)
    every_epoch.last_checkpoint_epoch = 1
    clock.now += 0.2
    assert every_epoch._decide(epoch(2)) == NO_REPORT  # due, but 0.2 s after the last report
    clock.now += reporting.REPORT_GAP_S
    assert every_epoch._decide(epoch(3)) == CHECKPOINT
    assert every_epoch._decide(epoch(50)) == CHECKPOINT


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


def test_epoch_seconds_read_in_milliseconds_below_one_second():
    assert _seconds(0.035) == "35 ms" and _seconds(2.44) == "2.4 s"
