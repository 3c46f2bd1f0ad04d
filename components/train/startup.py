"""Where the seconds from the command to the first epoch go.

Each process marks the wall-clock time (``time.time()``, comparable across
the processes of one machine and, to the clocks' agreement, of a cluster)
at which it finished a start-up phase; :func:`startup_phases` turns the
marks of the driver and of training's rank 0 into one duration per phase.
"""
import time

import psutil

PHASES = (
    ("ray", "Ray"),                    # command start -> Ray started or joined
    ("mlflow_run", "MLflow run"),      # -> the run opened
    ("load", "load"),                  # -> the load stage's output at hand
    ("augment", "augment"),            # -> random walks at hand (none: 0)
    ("workers", "workers"),            # -> the Train worker entered its function
    ("read_split", "split"),           # -> the split read into the worker
    ("experiment", "graph and model"),  # -> training graph and model built
    ("model", "model"),                # -> model on its device, checkpoint restored
    ("first_epoch", "first epoch"),    # -> the first epoch trained and evaluated
)
COMMAND = "command"
DRIVER_MARKS: dict[str, float] = {}
"""This process's marks: ``command`` (the command's start) and the driver's phases."""


def mark_command_start(at: float | None = None) -> None:
    """Marks the command's start: ``at`` (a ``time.time()``), by default
    when this process was created."""
    DRIVER_MARKS.clear()
    DRIVER_MARKS[COMMAND] = psutil.Process().create_time() if at is None else at


def mark(phase: str, marks: dict[str, float] | None = None) -> None:
    """Marks the end of ``phase`` now, in ``marks`` (default the driver's),
    unless it was marked already (a later seed's train stage)."""
    (DRIVER_MARKS if marks is None else marks).setdefault(phase, time.time())


def startup_phases(marks: dict[str, float]) -> dict[str, float]:
    """``startup_<phase>_s`` for each phase whose mark and previous mark are
    known, and ``startup_to_first_epoch_s`` when the command's start is."""
    phases, previous = {}, marks.get(COMMAND)
    for phase, _ in PHASES:
        if phase not in marks:
            continue
        if previous is not None:
            phases[f"startup_{phase}_s"] = max(marks[phase] - previous, 0.0)
        previous = marks[phase]
    if COMMAND in marks and "first_epoch" in marks:
        phases["startup_to_first_epoch_s"] = marks["first_epoch"] - marks[COMMAND]
    return phases


def describe_startup(metrics: dict[str, float]) -> str | None:
    """``14.2 s to the first epoch: Ray 4.1, MLflow run 1.0, ...``, or
    ``None`` without the total."""
    total = metrics.get("startup_to_first_epoch_s")
    if total is None:
        return None
    parts = [f"{label} {metrics[f'startup_{phase}_s']:.1f}" for phase, label in PHASES
             if f"startup_{phase}_s" in metrics]
    return f"{total:.1f} s to the first epoch: " + ", ".join(parts)
