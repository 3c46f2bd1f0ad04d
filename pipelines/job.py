"""What every command line shares: refuse bad input before any work, run
the job inside one MLflow run, and record a failure as a FAILED run."""
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import mlflow
import ray

from components.tracking import mark_failed
from components.train import WorkerGroup
from plnlp_core.datasets import cache_dir
from plnlp_core.errors import PLNLPError

T = TypeVar("T")


def prepare(validate: Callable[[], T], workers: WorkerGroup) -> T | None:
    """Runs ``validate``, starts or joins Ray and checks the worker group
    fits; on bad input prints one ``error:`` line and returns ``None``."""
    try:
        value = validate()
        if workers.num_workers < 1 or workers.cpus_per_worker < 1:
            raise PLNLPError("--num-workers and --cpus-per-worker must be at least 1.")
        ray.init(ignore_reinit_error=True)
        check_resources(workers)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    return value


def check_resources(workers: WorkerGroup) -> None:
    """Refuses a worker group the cluster can never hold (it would wait forever)."""
    available = ray.cluster_resources()
    fixes = {"CPU": "lower --num-workers or --cpus-per-worker",
             "GPU": "lower --num-workers or drop --use-gpu"}
    for name, amount in workers.resources().items():
        if available.get(name, 0) < amount:
            raise PLNLPError(f"{workers.num_workers} workers need {amount:g} {name}s but the Ray "
                             f"cluster has {available.get(name, 0):g}; {fixes[name]}.")


def execute(
    experiment: str, run_name: str, work_dir: str | None, job: Callable[[Path], T],
    run_id: str | None = None,
) -> tuple[str, T] | None:
    """Runs ``job(work)`` inside a new MLflow run of ``experiment`` (or the
    existing run ``run_id``, which goes on); returns the run's id and the
    job's result, or ``None`` after marking the run FAILED with the reason.
    A scratch ``work`` folder is removed afterwards unless ``work_dir``
    names it."""
    mlflow.set_experiment(experiment)
    work = Path(work_dir or tempfile.mkdtemp(prefix="plnlp-", dir=scratch_dir()))
    run = mlflow.start_run(run_id=run_id, run_name=None if run_id else run_name)
    try:
        result = job(work)
        mlflow.end_run()
    except Exception as error:  # the run is recorded as failed, then the error is shown
        reason = failure_reason(error)
        mark_failed(reason)
        print(f"error: {reason}", file=sys.stderr)
        return None
    finally:
        if work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return run.info.run_id, result


def scratch_dir() -> Path:
    """Where stage outputs of a run go unless ``--work-dir`` says."""
    root = cache_dir() / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


def failure_reason(error: BaseException) -> str:
    """The innermost cause's first line: Ray wraps a task's or worker's error
    in its own (``cause`` on Ray's errors, ``__cause__`` elsewhere)."""
    while (inner := getattr(error, "cause", None) or error.__cause__) not in (None, error):
        error = inner
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
