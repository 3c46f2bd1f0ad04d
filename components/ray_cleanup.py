"""Ray's clean-up calls after an interrupt, given a few seconds each.

While Ray's GCS is gone (a local Ray that ended with its driver's process
group, which ``timeout``, Slurm, systemd and Kubernetes all signal at once,
or a lost head node), every call that needs it (removing a placement group,
killing an actor, shutting Ray down) blocks until Ray's core worker ends
the whole process, 60 s later, without a word the command chose: an
interrupted run would never record its end. So each clean-up call runs in
a thread of its own for at most :data:`CLEANUP_CALL_S`; once one has not
returned, Ray is taken to be gone and the later ones are not made."""
import threading
from collections.abc import Callable

CLEANUP_CALL_S = 2.0
"""Seconds one clean-up call may take (a live Ray answers in milliseconds,
on 2 busy cores in well under a second)."""

UNDELIVERED_NOTE = ("the epochs printed after those logged were not delivered: Ray ended with "
                    "the driver")
"""What the closing line of an interrupt that Ray no longer answered adds."""

_unanswered = threading.Event()  # a clean-up call did not return in time


def begin() -> None:
    """A new interrupt's clean-up: every call is made again."""
    _unanswered.clear()


def cleaned_up(call: Callable[[], object], seconds: float = CLEANUP_CALL_S) -> bool:
    """Runs ``call`` for at most ``seconds``; whether it returned (an error
    it raised is raised here). ``False`` without calling it once an earlier
    clean-up call went unanswered (see :func:`ray_answers`)."""
    if _unanswered.is_set():
        return False
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # raised in the caller's thread below
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True, name="ray-cleanup")
    worker.start()
    worker.join(seconds)
    if not outcome:
        _unanswered.set()
        return False
    if outcome[0] is not None:
        raise outcome[0]
    return True


def ray_answers() -> bool:
    """Whether every clean-up call so far returned in time (Ray may be gone if not)."""
    return not _unanswered.is_set()
