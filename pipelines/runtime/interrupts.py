"""SIGINT (Ctrl-C) and SIGTERM while a command runs: its MLflow runs end
KILLED, tagged with the reason and the epoch reached, Ray is shut down, one
line ``interrupted: ...`` is printed and the process exits 128 + the
signal's number (130, 143). A sweep's loop first gets to save its state
(see :func:`library_stops_first`).

The runs' end is recorded first, at the signal, by a thread of its own
(:class:`InterruptRecord`), since what follows may wait on a Ray that is
gone: a scheduler's SIGTERM to the whole process group (``timeout``,
Slurm, systemd, Kubernetes) ends the local Ray with the driver, and every
Ray call that needs its GCS then blocks. Ray's clean-up calls are each
given seconds (:mod:`components.ray_cleanup`), and where Ray's GCS no
longer answers :data:`RAY_GONE_GRACE_S` after the signal, the process
ends at once with the runs already marked. A second signal during the
clean-up ends it at once too."""
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

import ray

from components import ray_cleanup
from components.recording.reads import (
    active_run_info,
    child_runs,
    get_run,
    main_thread_run_id,
    metric_history,
)
from components.recording.run_lifecycle import end_other_run, end_run
from components.recording.tags import (
    CHECKPOINTS_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    TUNE_STATE_TAG,
)
from components.storage.location import Location
from components.train.checkpoint_reader import resumable_epoch
from pipelines.runtime.ray_cluster import gcs_answers

SIGNALS = (signal.SIGINT, signal.SIGTERM)
DESCRIPTIONS = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}
_install_handler = signal.signal  # the real one, while ``signal.signal`` is guarded
_GUARDS: list["SignalGuard"] = []  # the active ones, innermost last
RAY_GONE_GRACE_S = 5.0
"""Seconds after a signal within which the clean-up must end once Ray's GCS
no longer answers; past them the process ends at once, its runs marked."""
MARKING_S = 5.0
"""Seconds the clean-up waits for the signal's own marking of the runs."""


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
        self.record: InterruptRecord | None = None  # the runs' end, recorded at the signal
        self._noting = threading.Lock()
        self._handled = 0  # signals the main thread's handler ran for
        self._wakeup: SignalWakeup | None = None

    def __enter__(self) -> "SignalGuard":
        if threading.current_thread() is threading.main_thread():
            self._previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
            self._previous_signal = signal.signal
            for signum in SIGNALS:
                _install_handler(signum, self._handle)
            signal.signal = _guarded_signal
            _GUARDS.append(self)
            self._wakeup = SignalWakeup(self._note)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._previous:
            self._wakeup.close()
            _GUARDS.remove(self)
            signal.signal = self._previous_signal
            for signum, handler in self._previous.items():
                _install_handler(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self._note(signum)
        self._handled += 1
        if self._handled == 1 and self._library_handler is not None:  # the library stops first
            handler, self._library_handler = self._library_handler, None
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def _note(self, signum: int) -> None:
        """Records the first signal and starts recording the runs' end, from
        whichever thread sees it first: the main thread's handler, or the
        :class:`SignalWakeup` thread while the main thread waits in Ray's
        native code, which runs no handler until it returns, and which may
        end the process meanwhile once Ray's processes have ended with the
        signal's process group."""
        with self._noting:
            if self.received is not None:
                return
            self.received, self.received_at = signum, time.time()
            ray_cleanup.begin()
            self.record = InterruptRecord(signum, self.received_at, main_thread_run_id())

    def raise_if_received(self) -> None:
        """For code that swallowed the ``KeyboardInterrupt``: raises it again."""
        if self.received is not None:
            raise KeyboardInterrupt(signal.Signals(self.received).name)


class SignalWakeup:
    """A thread that learns of SIGINT and SIGTERM as the signal arrives:
    Python's C handler writes each signal's number to a pipe
    (``signal.set_wakeup_fd``) at once, whereas Python's own handlers wait
    for the main thread to run Python code again. Calls ``note(signum)``
    for each; :meth:`close` restores the wake-up descriptor it replaced."""

    def __init__(self, note: Callable[[int], None]) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # as set_wakeup_fd requires
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._note = note
        threading.Thread(target=self._run, daemon=True, name="signal-wakeup").start()

    def _run(self) -> None:
        while data := os.read(self._read, 64):
            for signum in data:
                if signum in SIGNALS:
                    self._note(signum)
        os.close(self._read)

    def close(self) -> None:
        signal.set_wakeup_fd(self._previous)
        os.close(self._write)  # the thread reads the end and closes its side


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


class InterruptRecord:
    """Marks the runs a signal stopped KILLED at once, in a thread of its
    own (the active run ``run_id``, its parents and their runs still
    RUNNING, see :func:`record_killed`), then watches Ray: where its GCS no
    longer answers :data:`RAY_GONE_GRACE_S` after the signal and the
    clean-up has not ended (:meth:`close`), it ends the process itself
    (:meth:`end_now`). A Ray this process shut down ends the watch: no
    call can wait on it any more, and a process that goes on after the
    signal (a library's caller) must not be ended when its Ray stops."""

    def __init__(self, signum: int, received_at: float, run_id: str | None) -> None:
        self.signum, self.received_at, self.run_id = signum, received_at, run_id
        self.where: str | None = None  # what became of the runs, for the closing line
        self.marked, self._closed = threading.Event(), threading.Event()
        self._gcs = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
        threading.Thread(target=self._run, daemon=True, name="interrupt-record").start()

    def _run(self) -> None:
        try:
            self._mark()
        finally:
            self.marked.set()
        if self._gcs is None:
            return
        wait = self.received_at + RAY_GONE_GRACE_S - time.time()
        while not self._closed.wait(max(0.0, wait)):
            if not ray.is_initialized():  # shut down by this process: no call waits on it
                return
            if not gcs_answers(self._gcs):
                self.end_now(self.signum, ray_cleanup.UNDELIVERED_NOTE)
            wait = 1.0

    def _mark(self) -> None:
        """Marks the runs KILLED (again: a library may have ended a stopped
        trial FAILED meanwhile)."""
        try:
            if self.run_id is not None:
                self.where = record_killed(run_and_parents(self.run_id),
                                           _reason(self.signum), self.received_at)
        except Exception as error:  # the tracking store went away meanwhile
            self.where = f"its MLflow run could not be marked KILLED: {str(error).splitlines()[0]}"

    def close(self) -> None:
        """The clean-up ended: nothing more to watch."""
        self._closed.set()

    def end_now(self, signum: int, note: str = "") -> NoReturn:
        """Prints the closing line and ends the process at once (128 +
        ``signum``), once the runs are marked (within :data:`MARKING_S`) and
        marked again, as the clean-up it cuts short would have."""
        if self.marked.wait(MARKING_S):
            self._mark()
        print_closing_line(self.signum, _noted(self.where, note))
        sys.stdout.flush()
        os._exit(128 + signum)


def stop(guard: SignalGuard, interrupt: BaseException | None = None) -> NoReturn:
    """After an interrupt: shuts Ray down (within
    :data:`~components.ray_cleanup.CLEANUP_CALL_S`), ends the MLflow runs it
    stopped as KILLED (:func:`end_runs_killed`, after the signal's own
    marking, :class:`InterruptRecord`), prints one line (with the notes
    ``interrupt`` carries) and exits 128 + the signal's number (SIGINT's
    for a ``KeyboardInterrupt`` no signal raised). A second signal
    meanwhile ends the process at once."""
    signum = signal.Signals(guard.received or signal.SIGINT)
    record = guard.record or InterruptRecord(signum, time.time(), None)
    notes = "; ".join(getattr(interrupt, "__notes__", ()))
    with signals_end_at_once(record):
        ray_gone = not ray_cleanup.cleaned_up(ray.shutdown)  # so that no worker logs another epoch
        record.marked.wait(MARKING_S)
        try:
            where = end_runs_killed(_reason(signum), guard.received_at, notes) \
                or record.where or "no MLflow run had started"
        except Exception as error:  # the tracking store went away meanwhile
            where = f"its MLflow run could not be marked KILLED: {str(error).splitlines()[0]}"
        record.close()
        print_closing_line(signum, where)
        if ray_gone:  # Ray's own exit handler would wait on it too
            sys.stdout.flush()
            os._exit(128 + signum)
    raise SystemExit(128 + signum)


def print_closing_line(signum: int, where: str | None) -> None:
    """``interrupted: SIGTERM stopped the job and Ray was shut down (<where>)``."""
    print(f"interrupted: {_described(signum)} stopped the job and Ray was shut down "
          f"({where or 'no MLflow run had started'})", file=sys.stderr, flush=True)


@contextmanager
def signals_end_at_once(record: InterruptRecord) -> Iterator[None]:
    """For the block (the clean-up after a signal), another SIGINT or
    SIGTERM ends the process at once (:meth:`InterruptRecord.end_now`)."""
    main = threading.current_thread() is threading.main_thread()
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS} if main else {}
    for signum in previous:
        _install_handler(signum, lambda number, frame: record.end_now(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            _install_handler(signum, handler)


def _described(signum: int) -> str:
    return DESCRIPTIONS.get(signum, signal.Signals(signum).name)


def _reason(signum: int) -> str:
    return f"interrupted by {_described(signum)}"


def _noted(where: str | None, note: str) -> str | None:
    """``where`` with ``note`` before its ``; go on with`` (or at its end)."""
    if not where or not note or note in where:
        return where
    head, sep, tail = where.partition("; go on with")
    return f"{head}; {note}{sep}{tail}"


def end_runs_killed(reason: str, since: float | None = None, note: str = "") -> str | None:
    """Ends every active MLflow run, innermost first, as KILLED, and so its
    runs that the interrupt stopped (see :func:`record_killed`); returns
    what became of the outermost run and how to go on, with ``note``."""
    outermost, reached, logged = None, 0, 0
    while (run := active_run_info()) is not None:
        tags, outermost, reached, logged = _killed(run.run_id, reason, since, reached, logged)
        end_run("KILLED", tags)
    return _noted(outermost, note)


def record_killed(run_ids: list[str], reason: str, since: float | None = None) -> str | None:
    """Ends the runs ``run_ids`` (innermost first) as KILLED, and so their
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
    for run_id in run_ids:
        tags, outermost, reached, logged = _killed(run_id, reason, since, reached, logged)
        end_other_run(run_id, "KILLED", {key: str(value) for key, value in tags.items()})
    return outermost


def run_and_parents(run_id: str) -> list[str]:
    """``run_id``, then its parent, its parent's parent, ... (MLflow's
    ``mlflow.parentRunId`` tags)."""
    chain = [run_id]
    while (parent := get_run(chain[-1]).data.tags.get("mlflow.parentRunId")) \
            and parent not in chain:
        chain.append(parent)
    return chain


def _killed(run_id: str, reason: str, since: float | None, reached: int,
            logged: int) -> tuple[dict[str, object], str, int, int]:
    """The KILLED tags of ``run_id``, what became of it, and the largest
    epoch reached and logged by it, its stopped runs and the runs inside it
    (``reached``, ``logged``); ends its stopped runs."""
    children_reached, children_logged = _kill_stopped_children(run_id, reason, since)
    reached = max(reached, epoch_reached(run_id), children_reached)
    logged = max(logged, last_logged_epoch(run_id), children_logged)
    if TUNE_STATE_TAG in get_run(run_id).data.tags:
        return {FAILURE_TAG: reason}, _sweep_killed(run_id), reached, logged
    return ({FAILURE_TAG: reason, INTERRUPTED_TAG: reached},
            f"run {run_id} KILLED at epoch {reached}, logged through epoch {logged}; go on "
            f"with: python pipelines/run.py --resume {run_id}", reached, logged)


def _sweep_killed(run_id: str) -> str:
    """What became of an interrupted sweep's run."""
    from components.recording.sweep_records import recorded_outcomes

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
    """Ends the children of ``run_id`` the interrupt stopped as KILLED (those
    still RUNNING, and those ended since the signal: by a ``with`` block it
    left, or by its own marking, :class:`InterruptRecord`); returns their
    largest epoch reached, and logged."""
    stopped = [child for child in child_runs(run_id) if child.info.status == "RUNNING" or (
        since is not None and child.info.status in ("FAILED", "KILLED")
        and (child.info.end_time or 0) >= int(since * 1000))]
    reached = logged = 0
    for child in stopped:
        epoch = epoch_reached(child.info.run_id)
        end_other_run(child.info.run_id, "KILLED",
                      {FAILURE_TAG: reason, INTERRUPTED_TAG: str(epoch)})
        reached = max(reached, epoch)
        logged = max(logged, last_logged_epoch(child.info.run_id))
    return reached, logged
