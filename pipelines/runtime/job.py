"""What every command line shares once its services are up
(:mod:`pipelines.runtime.services`): run the job inside one MLflow run,
record a failure as a FAILED run and an interrupt as a KILLED one."""
import errno
import re
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import ray
import torch

from components.recording.driver_presence import driver_heartbeat, end_abandoned_runs
from components.recording.metric_delivery import MetricsUndelivered, spoken_duration
from components.recording.reads import active_run_info, get_run, run_names, tracking_uri
from components.recording.run_lifecycle import (
    end_run,
    mark_training_experiment,
    open_experiment,
    start_run,
)
from components.recording.run_records import clear_failure, mark_failed
from components.recording.tracking_store import (
    local_store_path,
    tracking_store_lock,
)
from components.storage.location import (
    Location,
)
from components.storage.split_meta import DatasetMeta
from components.storage.store_retries import store_did_not_answer, store_patience_s
from components.train.startup import mark
from pipelines.runtime.interrupts import SignalGuard, stop
from pipelines.runtime.ray_watch import ray_watched
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import cache_dir
from plnlp_core.errors import first_line, without_credentials
from plnlp_core.memory_estimate import refuse_past_memory

T = TypeVar("T")


def check_host_memory(config: PLNLPConfig, meta: DatasetMeta) -> None:
    """Refuses a run whose training worker would need more memory than the
    largest node of the Ray cluster has for tasks
    (:func:`~plnlp_core.memory_estimate.refuse_past_memory`)."""
    available = max(node["Resources"].get("memory", 0) for node in ray.nodes() if node["Alive"])
    refuse_past_memory(config, meta.dataset_info(), meta.num_nodes, meta.num_train_edges,
                       int(available))


def execute(
    experiment: str, run_name: str, work_dir: str | None, job: Callable[[Location], T],
    run_id: str | None = None, verbose: bool = False,
) -> tuple[str, T] | None:
    """Runs ``job(work)`` inside a new MLflow run of ``experiment`` (or the
    existing run ``run_id``, which goes on); returns the run's id and the
    job's result, or ``None`` after marking the run FAILED with the reason
    (printed after the error's traceback when ``verbose``).
    A scratch ``work`` folder is removed afterwards unless ``work_dir``
    names it. A Ray that dies meanwhile ends the run FAILED (see
    :mod:`pipelines.runtime.ray_watch`). The run is tagged with this driver and its heartbeat, and
    runs of ``experiment`` whose driver is gone are first marked FAILED
    (see :mod:`components.recording.driver_presence`). SIGINT or SIGTERM
    ends the run KILLED and exits 130 or 143 (see
    :func:`pipelines.runtime.interrupts.stop`)."""
    guard, work = SignalGuard(), None
    try:
        with guard:
            with tracking_store_lock(tracking_uri()):
                experiment_id = use_experiment(experiment)  # of two at once, one makes tables
            mark_training_experiment(experiment_id)
            for line in end_abandoned_runs(experiment_id):
                print(line, flush=True)
            work = Location(work_dir or tempfile.mkdtemp(prefix="plnlp-", dir=scratch_dir()))
            run = start_run(run_id=run_id, run_name=None if run_id
                            else distinct_run_name(experiment_id, run_name))
            mark("mlflow_run")
            with driver_heartbeat(run.info.run_id), \
                    ray_watched(run.info.run_id, lambda: guard.received is not None):
                result = job(work)
            guard.raise_if_received()  # a library that swallowed the interrupt
            if run_id is not None:
                clear_failure()  # the resumed run finished
            end_run()
    except KeyboardInterrupt as interrupt:
        stop(guard, interrupt)
    except Exception as error:  # the run is recorded as failed, then the error is shown
        reason = describe_failure(error)
        try:
            mark_failed(reason, tracking_away=any(
                isinstance(cause, MetricsUndelivered) for cause in causes(error)))
        except Exception as unrecorded:  # the tracking store is away too
            reason += (f" (and its MLflow run could not be marked FAILED: "
                       f"{failure_reason(unrecorded)})")
        if verbose:
            traceback.print_exception(error, file=sys.stderr)
        print(f"error: {reason}", file=sys.stderr)
        return None
    finally:
        if work_dir is None and work is not None:
            work.remove()
    return run.info.run_id, result


def use_experiment(name: str) -> str:
    """Makes ``name`` MLflow's active experiment. A new one in a SQLite
    store gets its artifacts in ``mlartifacts/`` beside the file: MLflow's own
    default is ``./mlruns`` under the current folder, which under ``ray job
    submit`` is Ray's job folder, deleted later. A server keeps its default.
    Returns the experiment's id."""
    uri = tracking_uri()
    store = local_store_path(uri) if urlsplit(uri).scheme == "sqlite" else None
    return open_experiment(name, None if store is None
                           else (store.resolve().parent / "mlartifacts").as_uri())


def distinct_run_name(experiment_id: str, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``, ... when the experiment has a
    run of that name already, so that the UI tells reruns apart."""
    taken = run_names(experiment_id, name)
    suffix = 1
    while (candidate := name if suffix == 1 else f"{name}-{suffix}") in taken:
        suffix += 1
    return candidate


def scratch_dir() -> Path:
    """Where stage outputs of a run go unless ``--work-dir`` says."""
    root = cache_dir() / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


def failure_reason(error: BaseException) -> str:
    """The innermost cause's first line (see :func:`causes`). A file that
    is not there (``[Errno 2] No such file or directory``) is named by its
    path, the innermost one the chain gives, or the line says that none
    was given and ``--verbose`` shows where."""
    *outer, error = causes(error)
    line = first_line(error)
    if isinstance(error, OSError) and error.errno == errno.ENOENT:
        paths = [str(each.filename) for each in (*outer, error)
                 if isinstance(each, OSError) and each.filename]
        if not paths:
            line += " (no path given; --verbose shows where)"
        elif paths[-1] not in line:
            line += f": {paths[-1]!r}"
    return without_credentials(line)


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what it wraps, outermost first: Ray wraps a task's
    error (``cause``), Ray Train a worker's (``worker_failures``, the lowest
    rank's) or its controller's (``controller_failure``), Python a cause
    (``__cause__``)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        failures = getattr(error, "worker_failures", None) or {}
        error = (failures[min(failures)] if failures else None) \
            or getattr(error, "controller_failure", None) or getattr(error, "cause", None) \
            or error.__cause__


def describe_failure(error: BaseException) -> str:
    """What the run's ``failure_reason`` says: :func:`failure_reason`, or,
    when a GPU ran out of memory anywhere in the chain, which settings to lower."""
    out_of_memory = [cause for cause in causes(error) if isinstance(
        cause, torch.cuda.OutOfMemoryError) or "CUDA out of memory" in str(cause)]
    if out_of_memory:  # the innermost says how much it wanted
        return gpu_out_of_memory_reason(out_of_memory[-1], _active_params())
    store_away = [cause for cause in causes(error) if store_did_not_answer(cause)]
    if store_away:
        return store_away_reason(store_away[-1])
    return failure_reason(error)


def store_away_reason(error: BaseException) -> str:
    """The sentence for an object store that did not answer within its
    patience (``components.storage.store_retries``): what is kept, and how
    to go on."""
    run = active_run_info()
    again = f"python pipelines/run.py --resume {run.run_id}" if run else "the same command"
    return without_credentials(
        f"the object store did not answer for over {spoken_duration(store_patience_s())} "
        f"({first_line(error)}); the run's complete checkpoints are kept: once the store "
        f"answers, go on with {again}.")


def gpu_out_of_memory_reason(error: BaseException, params: dict[str, str]) -> str:
    """The sentence for a GPU out of memory, with the batch sizes the run used."""
    wanted = re.search(r"Tried to allocate ([\d.]+ \w+)", str(error))
    detail = f" (tried to allocate {wanted.group(1)})" if wanted else ""
    return (f"out of GPU memory{detail}; lower batch_size (now {params.get('batch_size', '?')}) "
            f"or eval_batch_size (now {params.get('eval_batch_size', '?')}), or the hidden "
            "sizes.")


def _active_params() -> dict[str, str]:
    """The settings the innermost active MLflow run recorded."""
    run = active_run_info()
    return get_run(run.run_id).data.params if run is not None else {}
