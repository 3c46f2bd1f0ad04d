"""SIGINT (Ctrl-C) and SIGTERM while a command runs: its MLflow runs end
KILLED, tagged with the reason and the epoch reached, Ray is shut down, one
line ``interrupted: ...`` is printed and the process exits 128 + the
signal's number (130, 143). A sweep's loop first gets to save its state
(see :func:`library_stops_first`)."""
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

import ray

from components.recording.names import (
    CHECKPOINTS_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    TUNE_STATE_TAG,
)
from components.recording.reads import active_run_info, child_runs, get_run, metric_history
from components.recording.runs import end_other_run, end_run
from components.storage.location import Location
from components.train.checkpoints import resumable_epoch

SIGNALS = (signal.SIGINT, signal.SIGTERM)
DESCRIPTIONS = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}
_install_handler = signal.signal  # the real one, while ``signal.signal`` is guarded
_GUARDS: list["SignalGuard"] = []  # the active ones, innermost last


class SignalGuard:
    """While active (in the main thread), SIGINT and SIGTERM raise
    ``KeyboardInterrupt`` (Ray's ``ray.get`` passes only that one through)
    and :attr:`received` records which came first. Libraries that install
    their own handler for them meanwhile are kept from doing so: Ray Train's
    ``fit`` would otherwise turn Ctrl-C into a graceful abort
    that returns as if training had ended, and Ray Tune into a stop that
    returns partial results (but see :func:`library_stops_first`)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.received_at: float | None = None  # time.time() of the first signal
        self._previous: dict[int, object] = {}
        self._previous_signal = signal.signal
        self._handing_over = False  # inside library_stops_first
        self._library_handler: Callable | None = None

    def __enter__(self) -> "SignalGuard":
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
            self._previous_signal = signal.signal
            for signum in SIGNALS:
                _install_handler(signum, self._handle)
            signal.signal = _guarded_signal
            _GUARDS.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous:
            _GUARDS.remove(self)
            signal.signal = self._previous_signal
            for signum, handler in self._previous.items():
                _install_handler(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received, self.received_at = signum, time.time()
            if self._library_handler is not None:  # the library stops first
                handler, self._library_handler = self._library_handler, None
                handler(signal.SIGINT, frame)
                return
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def raise_if_received(self) -> None:
        """For code that swallowed the ``KeyboardInterrupt``: raises it again."""
        if self.received is not None:
            raise KeyboardInterrupt(signal.Signals(self.received).name)


def _guarded_signal(signum: int, handler: object) -> object:
    """``signal.signal`` while a :class:`SignalGuard` owns SIGINT and SIGTERM:
    a library's SIGINT handler is kept for :func:`library_stops_first`."""
    if signum not in SIGNALS:
        return _install_handler(signum, handler)
    guard = _GUARDS[-1]
    if signum == signal.SIGINT and guard._handing_over and callable(handler) \
            and handler != guard._handle:
        guard._library_handler = handler
    return signal.getsignal(signum)


@contextmanager
def library_stops_first() -> Iterator[None]:
    """For the block, the first SIGINT or SIGTERM goes to the SIGINT handler
    a library installed meanwhile, instead of raising ``KeyboardInterrupt``
    where the main thread is: Ray Tune's ends its loop, saves the
    experiment's state (which ``Tuner.restore`` goes on from) and stops its
    trials. The active :class:`SignalGuard` records the signal all the same,
    the block's end raises ``KeyboardInterrupt`` for it, and a second signal
    raises at once. Outside a guard, or before the library installs its
    handler, signals raise as usual."""
    guard = _GUARDS[-1] if _GUARDS else None
    if guard is None:
        yield
        return
    guard._handing_over = True
    try:
        yield
    finally:
        guard._handing_over, guard._library_handler = False, None
    guard.raise_if_received()


@contextmanager
def signals_ignored() -> Iterator[None]:
    """SIGINT and SIGTERM are ignored for the block (the clean-up after one)."""
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    main = threading.current_thread() is threading.main_thread()
    if main:
        for signum in SIGNALS:
            _install_handler(signum, signal.SIG_IGN)
    try:
        yield
    finally:
        if main:
            for signum, handler in previous.items():
                _install_handler(signum, handler)


def stop(guard: SignalGuard) -> NoReturn:
    """After an interrupt: shuts Ray down, ends the MLflow runs it stopped
    as KILLED (:func:`end_runs_killed`), prints one line and exits 128 + the
    signal's number (SIGINT's for a ``KeyboardInterrupt`` no signal raised)."""
    signum = signal.Signals(guard.received or signal.SIGINT)
    reason = f"interrupted by {DESCRIPTIONS.get(signum, signum.name)}"
    with signals_ignored():
        ray.shutdown()  # first, so that no worker logs another epoch
        try:
            where = end_runs_killed(reason, guard.received_at) or "no MLflow run had started"
        except Exception as error:  # the tracking store went away meanwhile
            where = f"its MLflow run could not be marked KILLED: {str(error).splitlines()[0]}"
    print(f"interrupted: {DESCRIPTIONS.get(signum, signum.name)} stopped the job and Ray "
          f"was shut down ({where})", file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def end_runs_killed(reason: str, since: float | None = None) -> str | None:
    """Ends every active MLflow run, innermost first, as KILLED, and so its
    runs that the interrupt stopped: those still RUNNING (a sweep's trials)
    and those that ended FAILED after ``since`` (a ``with
    mlflow.start_run()`` block that the interrupt left, as a seed of
    ``--runs`` does). Each is tagged with ``reason`` (``failure_reason``)
    and the epoch it reached (``interrupted_at_epoch``, see
    :func:`epoch_reached`, else its runs', 0 if none), but a sweep's run:
    its trials ran side by side, each to its own epoch. Returns what became
    of the outermost run and how to go on: ``run <id> KILLED at epoch <n>,
    logged through epoch <m>; go on with: ...`` (``m``: the last epoch
    MLflow holds, of the run or the run it was stopped in), or for a sweep
    how many trials ended."""
    outermost, reached, logged = None, 0, 0
    while (run := active_run_info()) is not None:
        run_id = run.run_id
        children_reached, children_logged = _kill_stopped_children(run_id, reason, since)
        reached = max(reached, epoch_reached(run_id), children_reached)
        logged = max(logged, last_logged_epoch(run_id), children_logged)
        sweep = TUNE_STATE_TAG in get_run(run_id).data.tags
        end_run("KILLED", {FAILURE_TAG: reason} if sweep
                else {FAILURE_TAG: reason, INTERRUPTED_TAG: reached})
        outermost = _sweep_killed(run_id) if sweep else (
            f"run {run_id} KILLED at epoch {reached}, logged through epoch {logged}; go on "
            f"with: python pipelines/run.py --resume {run_id}")
    return outermost


def _sweep_killed(run_id: str) -> str:
    """What became of an interrupted sweep's run."""
    from components.recording.sweep_tracking import recorded_outcomes

    ended = len(recorded_outcomes(run_id))
    return (f"sweep run {run_id} KILLED with {ended} trial{'' if ended == 1 else 's'} ended; "
            f"go on with --resume {run_id}")


def epoch_reached(run_id: str) -> int:
    """The epoch ``--resume`` goes on after: for a run that keeps training
    checkpoints (its ``plnlp.checkpoints`` tag), that of the newest one
    every worker finished writing (0 if none), which may be later than the
    last epoch MLflow holds (a report dies with its worker) or earlier (the
    epochs since are trained again); else the largest step of its
    ``train_loss`` history, 0 if none."""
    run = get_run(run_id)
    storage = run.data.tags.get(CHECKPOINTS_TAG)
    if storage:
        return resumable_epoch(Location(storage), int(run.data.params.get("num_workers", 1)))
    return last_logged_epoch(run_id)


def last_logged_epoch(run_id: str) -> int:
    """The largest step of the run's ``train_loss`` history, 0 if none."""
    return max((int(m.step) for m in metric_history(run_id, "train_loss")), default=0)


def _kill_stopped_children(run_id: str, reason: str, since: float | None) -> tuple[int, int]:
    """Ends the children of ``run_id`` the interrupt stopped as KILLED;
    returns their largest epoch reached, and logged."""
    stopped = [child for child in child_runs(run_id) if child.info.status == "RUNNING" or (
        since is not None and child.info.status == "FAILED"
        and (child.info.end_time or 0) >= int(since * 1000))]
    reached = logged = 0
    for child in stopped:
        epoch = epoch_reached(child.info.run_id)
        end_other_run(child.info.run_id, "KILLED",
                      {FAILURE_TAG: reason, INTERRUPTED_TAG: str(epoch)})
        reached = max(reached, epoch)
        logged = max(logged, last_logged_epoch(child.info.run_id))
    return reached, logged
