"""Metrics reach MLflow beside the training: in order, tried again while
the tracking server is away, and a run told in one sentence how to deliver
what could not go."""
import re
import threading
import time

import pytest
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST
from mlflow.tracking import MlflowClient

import components.recording.metric_delivery as delivery
from components.recording.epoch_logger import EpochLogger
from components.recording.metric_delivery import MetricSender, MetricsUndelivered
from components.recording.tags import EPOCHS, FINAL, WALL_TIME


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(delivery, "BACKOFF_S", (0.01,))


def unreachable() -> MlflowException:
    return MlflowException("API request to http://127.0.0.1:5000/api/2.0/mlflow/runs/log-batch "
                           "failed with exception HTTPConnectionPool(...): Max retries exceeded")


class Server:
    """Deliveries land in ``received`` while ``up`` is set; else raise as a
    stopped server does."""

    def __init__(self) -> None:
        self.up = threading.Event()
        self.up.set()
        self.received: list[int] = []

    def log(self, number: int):
        def delivery(client: object) -> None:
            if not self.up.is_set():
                raise unreachable()
            self.received.append(number)
        return delivery


def test_deliveries_go_in_order_beside_the_caller_and_wait_for_a_server_that_comes_back(
        capfd):
    server, sender = Server(), MetricSender("http://127.0.0.1:5000", "run1")
    server.up.clear()
    started = time.perf_counter()
    for number in range(5):
        sender.send(server.log(number))
    assert time.perf_counter() - started < 0.5  # the caller never waits on the server
    assert not sender.wait(timeout=0.3) and server.received == []
    server.up.set()
    assert sender.wait(timeout=10)
    sender.deliver()
    assert server.received == [0, 1, 2, 3, 4]
    out = capfd.readouterr().out.splitlines()
    assert out[0].startswith("MLflow's tracking server does not answer (API request to ")
    assert out[0].endswith("training goes on, and its epochs are logged once the server is back.")
    assert out[1].startswith("MLflow's tracking server answers again after ")
    assert len(out) == 2


def test_a_server_away_past_the_patience_fails_with_how_to_resume(capfd):
    server, sender = Server(), MetricSender("http://127.0.0.1:5000", "run1", patience_s=0.3)
    server.up.clear()
    sender.send(server.log(1))
    with pytest.raises(MetricsUndelivered) as raised:
        sender.deliver()
    message = str(raised.value)
    assert re.match(r"the tracking server at http://127\.0\.0\.1:5000 has not answered for "
                    r"\d s \(API request to ", message)
    assert message.endswith("every epoch it did not log is kept in the run's checkpoints: once "
                            "the server answers, go on with `python pipelines/run.py --resume "
                            "run1`, which logs them.")


@pytest.mark.slow  # waits out a 2 s patience
def test_the_patience_counts_from_when_the_failing_request_was_sent():
    """MLflow's client retries a request for minutes before it fails: the
    outage is counted from when the request went, so a run whose patience
    has passed by then fails at once instead of waiting it out again."""
    sender = MetricSender("http://127.0.0.1:5000", "run1", patience_s=2.0)

    def retried_by_the_client(client: object) -> None:
        time.sleep(2.2)
        raise unreachable()

    sender.send(retried_by_the_client)
    started = time.perf_counter()
    with pytest.raises(MetricsUndelivered, match=r"has not answered for \d s"):
        sender.deliver()
    assert time.perf_counter() - started < 4  # not 2.2 s and then the 2 s patience again


def test_a_refused_delivery_is_not_tried_again_and_says_why():
    tries = []

    def refused(client: object) -> None:
        tries.append(1)
        raise MlflowException("Run 'run1' not found", error_code=RESOURCE_DOES_NOT_EXIST)

    sender = MetricSender("http://127.0.0.1:5000", "run1")
    sender.send(refused)
    with pytest.raises(MetricsUndelivered, match="^MLflow refused the run's metrics: Run 'run1' "
                                                 "not found; every epoch it did not log"):
        sender.deliver()
    assert tries == [1]


def test_the_patience_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(delivery.PATIENCE_ENV, "42")
    assert MetricSender("sqlite://", "run1").patience_s == 42.0


def report(epochs: range, final: bool = False) -> list[dict]:
    rows = [{"epoch": e, "train_loss": 1.0 / e, WALL_TIME: 1000.0 + e} for e in epochs]
    return [{"epoch": epochs[-1], EPOCHS: rows, FINAL: final}]


def test_the_logger_logs_each_epoch_once_and_its_final_report_returns_once_they_are_in(
        tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    run_id = client.create_run(client.create_experiment("delivery")).info.run_id
    logger = EpochLogger(uri, run_id)
    logger.after_report(None, report(range(1, 4)), None)
    logger.after_report(None, report(range(2, 6)), None)  # a restart sends 2 and 3 again
    logger.after_report(None, report(range(6, 7), final=True), None)
    history = client.get_metric_history(run_id, "train_loss")  # no wait: the final one did
    assert sorted(m.step for m in history) == [1, 2, 3, 4, 5, 6]
    assert {m.step: m.timestamp for m in history}[4] == 1_004_000


class AwayThenBack:
    """An MlflowClient whose server is away until ``back`` is set."""

    back = threading.Event()
    batches: list[list] = []

    def __init__(self, uri: str) -> None:
        pass

    def get_metric_history(self, run_id: str, key: str) -> list:
        if not self.back.is_set():
            raise unreachable()
        return []

    def log_batch(self, run_id: str, metrics: list) -> None:
        self.batches.append(metrics)


def test_reports_made_while_the_server_was_away_go_in_one_batch(monkeypatch, capfd):
    import mlflow.tracking

    monkeypatch.setattr(mlflow.tracking, "MlflowClient", AwayThenBack)
    logger = EpochLogger("http://127.0.0.1:5000", "run1")
    for epoch in range(1, 7):
        logger.after_report(None, report(range(epoch, epoch + 1)), None)
    assert not logger.wait(timeout=0.3)
    AwayThenBack.back.set()
    logger.deliver()
    assert [sorted({m.step for m in batch}) for batch in AwayThenBack.batches] == [
        [1, 2, 3, 4, 5, 6]]


def test_a_delivery_already_waiting_is_not_queued_twice(monkeypatch):
    import mlflow.tracking

    monkeypatch.setattr(mlflow.tracking, "MlflowClient", lambda uri: None)
    runs, begun, release = [], threading.Event(), threading.Event()

    def drain(client: object) -> None:
        runs.append(len(runs) + 1)
        begun.set()
        release.wait(5)

    sender = MetricSender("http://127.0.0.1:5000", "run1")
    sender.send(drain)
    assert begun.wait(5)
    for _ in range(3):  # while the first runs: one more waits
        sender.send(drain)
    release.set()
    assert sender.wait(timeout=10)
    assert runs == [1, 2] and sender.queued == sender.sent == 2
