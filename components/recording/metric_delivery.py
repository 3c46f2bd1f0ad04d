"""Metrics on their way to MLflow: sent in order by a thread of their own,
so that training never waits on the tracking server, and kept while the
server does not answer (an upgrade, a database failover, a restarted pod)
until it does, or until a bound passes (:data:`PATIENCE_S`).

A delivery is a function of an ``MlflowClient``; one that fails for a
passing reason (the server unreachable, a 5xx answer) is tried again with
backoff, so each must be safe to repeat: MLflow keeps a metric once
however often the same ``(key, value, step, timestamp)`` is logged."""
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from plnlp_core.errors import first_line

PATIENCE_ENV = "PLNLP_TRACKING_PATIENCE_S"
PATIENCE_S = 3600.0
"""Seconds a run waits, once its training has ended, for a tracking server
that stopped answering (``PLNLP_TRACKING_PATIENCE_S`` sets it); counted
from when the first failed delivery was sent. Training goes on meanwhile however long
the server is away; what it measured stays in its checkpoints."""
DELIVERY_GAP_S = 2.0
"""Fewest seconds between two deliveries, unless someone waits for them
(:meth:`MetricSender.wait`); a delivery sent meanwhile that is queued
already is not queued twice, so the reports of short epochs go to MLflow
in batches rather than a request each (which cost 12 % of a 0.6 s epoch)."""
BACKOFF_S = (1.0, 2.0, 5.0, 10.0)
"""Seconds between tries of a failing delivery; the last repeats, but
:meth:`MetricSender.wait` tries again at once."""
PASSING_ERRORS = {"INTERNAL_ERROR", "TEMPORARILY_UNAVAILABLE", "REQUEST_LIMIT_EXCEEDED"}
"""MLflow's error codes for a failure that may pass: the server unreachable
or answering 5xx (its client raises ``INTERNAL_ERROR`` for both)."""


class MetricsUndelivered(RuntimeError):
    """Raised when what a run measured could not reach MLflow."""


Delivery = Callable[[object], None]
"""Logs something with the ``MlflowClient`` it is given; safe to repeat."""


class MetricSender:
    """Runs deliveries to the MLflow run ``run_id`` in order, in a daemon
    thread, trying a failing one again after :data:`BACKOFF_S` until it
    goes through; prints one line when the server stops answering and one
    when it answers again. A delivery that fails for good (the run deleted,
    a value refused) ends the sending: :meth:`deliver` says why.

    Args:
        tracking_uri (str): The MLflow tracking URI.
        run_id (str): The run the deliveries log to.
        patience_s (float, optional): How long :meth:`deliver` waits, from
            the first failed request (default :data:`PATIENCE_S`, or the
            ``PLNLP_TRACKING_PATIENCE_S`` environment variable).
    """

    def __init__(self, tracking_uri: str, run_id: str, patience_s: float | None = None) -> None:
        self.tracking_uri, self.run_id = tracking_uri, run_id
        self.patience_s = float(os.environ.get(PATIENCE_ENV, PATIENCE_S)) \
            if patience_s is None else patience_s
        self._waiting: deque[Delivery] = deque()
        self._changed = threading.Condition()
        self.queued = self.sent = self.waiters = 0
        self.failing_since: float | None = None
        self.last_error: str | None = None
        self.failure: str | None = None
        self._thread: threading.Thread | None = None
        self._hurry = threading.Event()  # set by a waiter: end the gap or backoff now

    def send(self, delivery: Delivery) -> None:
        """Queues ``delivery``, unless it waits already (not yet begun);
        returns at once."""
        with self._changed:
            if delivery in list(self._waiting)[1:]:  # the first may have begun
                return
            self._waiting.append(delivery)
            self.queued += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="mlflow-metrics")
                self._thread.start()
            self._changed.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until every delivery queued so far went through, at most
        ``timeout`` seconds; whether they did."""
        with self._changed:
            target = self.queued
            self.waiters += 1
            self._hurry.set()
            try:
                return self._changed.wait_for(
                    lambda: self.sent >= target or self.failure is not None, timeout) \
                    and self.failure is None
            finally:
                self.waiters -= 1

    def deliver(self) -> None:
        """Waits until every delivery queued so far went through, while the
        server has failed for less than ``patience_s``; else raises
        :class:`MetricsUndelivered`, saying how to deliver them."""
        while not self.wait(timeout=1.0):
            with self._changed:
                gone = self.failure is not None or (
                    self.failing_since is not None
                    and time.time() - self.failing_since >= self.patience_s)
                if gone:
                    raise MetricsUndelivered(self._undelivered())

    def _undelivered(self) -> str:
        """Why the queued deliveries did not go, and how to deliver them."""
        if self.failure is not None:
            why = f"MLflow refused the run's metrics: {self.failure}"
        else:
            why = (f"the tracking server at {self.tracking_uri} has not answered for "
                   f"{spoken_duration(time.time() - self.failing_since)} ({self.last_error})")
        return (f"{why}; every epoch it did not log is kept in the run's checkpoints: once "
                f"the server answers, go on with `python pipelines/run.py --resume "
                f"{self.run_id}`, which logs them.")

    def _run(self) -> None:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(self.tracking_uri)
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._waiting))
                delivery = self._waiting[0]
            if not self._try(delivery, client):
                return
            with self._changed:
                self._waiting.popleft()
                self.sent += 1
                self._changed.notify_all()
            if not self.waiters:
                self._hurry.wait(DELIVERY_GAP_S)
            self._hurry.clear()

    def _try(self, delivery: Delivery, client: object) -> bool:
        """Runs ``delivery`` until it goes through (True) or fails for good."""
        from mlflow.exceptions import MlflowException

        tries = 0
        while True:
            sent_at = time.time()
            try:
                delivery(client)
            except MlflowException as error:
                if error.error_code not in PASSING_ERRORS:
                    return self._failed_for_good(error)
                self._failed(error, sent_at)
            except OSError as error:  # a file store's disk, a socket below the client
                self._failed(error, sent_at)
            else:
                self._answered()
                return True
            self._hurry.wait(BACKOFF_S[min(tries, len(BACKOFF_S) - 1)])
            self._hurry.clear()
            tries += 1

    def _failed(self, error: Exception, sent_at: float) -> None:
        """Notes a failed try; the outage counts from when its request was
        sent, since MLflow's client retries it for minutes before it fails."""
        with self._changed:
            self.last_error = first_line(error)
            if self.failing_since is None:
                self.failing_since = sent_at
                print(f"MLflow's tracking server does not answer ({self.last_error}); training "
                      f"goes on, and its epochs are logged once the server is back.",
                      file=sys.__stdout__, flush=True)

    def _answered(self) -> None:
        with self._changed:
            if self.failing_since is not None:
                print(f"MLflow's tracking server answers again after "
                      f"{spoken_duration(time.time() - self.failing_since)}; the epochs measured "
                      f"meanwhile are being logged.", file=sys.__stdout__, flush=True)
            self.failing_since = None

    def _failed_for_good(self, error: Exception) -> bool:
        with self._changed:
            self.failure = first_line(error)
            self._changed.notify_all()
        return False


def spoken_duration(seconds: float) -> str:
    """``45 s``, or ``12 min`` from two minutes on."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"
