"""A training actor's reports reach the driver's callbacks once each, in
order, however the driver's requests fall against the training's reports."""
import threading
import time
from types import SimpleNamespace

import pytest

from components.train import report_relay
from components.train.report_relay import ReportQueue, ReportRelay
from components.train.session import TrialStopped


def reported(queue: ReportQueue, *epochs: int) -> None:
    for epoch in epochs:
        queue.after_report(None, [{"epoch": epoch}], f"checkpoint-{epoch}")


def test_the_queue_gives_what_came_after_the_reports_taken_and_forgets_those():
    queue = ReportQueue()
    reported(queue, 1, 2, 3)
    assert queue.after(0, 0.0) == ([({"epoch": 1}, "checkpoint-1"), ({"epoch": 2}, "checkpoint-2"),
                                    ({"epoch": 3}, "checkpoint-3")], False)
    assert queue.after(2, 0.0) == ([({"epoch": 3}, "checkpoint-3")], False)
    assert len(queue._reports) == 1  # the first two were taken
    reported(queue, 4)
    older = queue.after(1, 0.0)  # a count older than what was taken loses nothing untaken
    assert [metrics["epoch"] for metrics, _ in older[0]] == [3, 4]
    queue.close()
    assert queue.after(3, 0.0) == ([({"epoch": 4}, "checkpoint-4")], True)


def test_the_queue_waits_for_a_report_until_the_timeout_or_the_training_s_end():
    queue = ReportQueue()
    start = time.monotonic()
    assert queue.after(0, 0.3) == ([], False)
    assert time.monotonic() - start >= 0.3
    threading.Timer(0.2, reported, (queue, 1)).start()
    start = time.monotonic()
    assert queue.after(0, 10.0) == ([({"epoch": 1}, "checkpoint-1")], False)
    assert time.monotonic() - start < 5
    threading.Timer(0.2, queue.close).start()
    assert queue.after(1, 10.0) == ([], True)


class QueueActor:
    """Stands in for a training actor: its queue answers the relay's requests."""

    def __init__(self, queue: ReportQueue) -> None:
        self.reports_after = SimpleNamespace(remote=queue.after)
        self.last_reports = SimpleNamespace(remote=queue.last)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def after_report(self, run_context: object, metrics: list[dict], checkpoint: str) -> None:
        self.seen.append((metrics[0]["epoch"], checkpoint))


@pytest.fixture
def local_get(monkeypatch):
    """``ray.get`` of what the stand-in actor answers (or raises)."""
    def get(value: object, timeout: float | None = None) -> object:
        if isinstance(value, Exception):
            raise value
        return value
    monkeypatch.setattr(report_relay.ray, "get", get)


def test_every_report_reaches_each_callback_once_in_order_then_the_result(local_get):
    queue, first, second = ReportQueue(), Recorder(), Recorder()

    def train() -> None:
        for epoch in range(1, 8):
            reported(queue, epoch)
            time.sleep(0.05)
        queue.close()

    threading.Thread(target=train).start()
    assert ReportRelay(QueueActor(queue), [first, second]).follow("newest") == "newest"
    assert first.seen == second.seen == [(epoch, f"checkpoint-{epoch}") for epoch in range(1, 8)]


def test_the_reports_before_a_failure_are_relayed_before_it_is_raised(local_get):
    queue, recorder = ReportQueue(), Recorder()
    reported(queue, 1, 2)
    queue.close()
    with pytest.raises(RuntimeError, match="the training failed"):
        ReportRelay(QueueActor(queue), [recorder]).follow(RuntimeError("the training failed"))
    assert [epoch for epoch, _ in recorder.seen] == [1, 2]


def test_the_last_flush_relays_what_is_left_and_stops_the_training_at_its_next_report(
        local_get):
    import ray

    queue, recorder = ReportQueue(), Recorder()
    relay = ReportRelay(QueueActor(queue), [recorder])
    reported(queue, 1, 2, 3)
    assert relay.last_flush(1.0)
    assert [epoch for epoch, _ in recorder.seen] == [1, 2, 3]
    with pytest.raises(TrialStopped):
        reported(queue, 4)
    assert queue.after(3, 0.0) == ([], False)  # the refused report was not kept
    dead = SimpleNamespace(last_reports=SimpleNamespace(
        remote=lambda count: ray.exceptions.RayActorError()))
    assert not ReportRelay(dead, [recorder]).last_flush(1.0)
    assert len(recorder.seen) == 3


def train_reporting_then_printing(queue: ReportQueue, printed: list[int]) -> None:
    """Short epochs, each reported, then printed (as EpochReporter does),
    until the queue refuses a report."""
    try:
        for epoch in range(1, 1000):
            reported(queue, epoch)
            printed.append(epoch)
            time.sleep(0.0005)
    except TrialStopped:
        pass
    finally:
        queue.close()


def test_every_epoch_printed_before_or_after_the_last_flush_is_relayed(local_get):
    """However the interrupted driver's last flush falls against a training
    of short epochs, the epochs printed are those it relayed, once the
    training ends, and the training stopped at its next report."""
    for pause in (0.0, 0.001, 0.003, 0.01):
        queue, recorder, printed = ReportQueue(), Recorder(), []
        training = threading.Thread(target=train_reporting_then_printing, args=(queue, printed))
        training.start()
        time.sleep(pause)
        ReportRelay(QueueActor(queue), [recorder]).last_flush(1.0)
        training.join()
        assert printed == [epoch for epoch, _ in recorder.seen]
        assert len(printed) < 999
