"""How every command starts: refuse bad input and unreachable services
before any work, then start or join Ray. Light on purpose: it imports
neither torch nor PyG, which the job's own modules load while Ray starts."""
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

import ray

from components.recording.reads import tracking_uri
from components.recording.tracking_store import check_tracking_store
from components.storage.location import Location, check_listable, check_writable, is_uri
from components.train.worker_group import WorkerGroup
from pipelines.runtime.home_folder import keep_home_clean
from pipelines.runtime.interrupts import SignalGuard, stop
from pipelines.runtime.ray_cluster import connect_ray, sized_workers
from plnlp_core.errors import PLNLPError

T = TypeVar("T")


def prepare(validate: Callable[[], T], workers: WorkerGroup, verbose: bool = True,
            work_dir: str | None = None, data_root: str | None = None,
            beside: Sequence[str] = ()) -> T | None:
    """:func:`start_services`; on bad input prints one ``error:`` line and
    returns ``None``."""
    try:
        return start_services(validate, workers, verbose, work_dir, data_root, beside)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def start_services(validate: Callable[[], T], workers: WorkerGroup, verbose: bool = True,
                   work_dir: str | None = None, data_root: str | None = None,
                   beside: Sequence[str] = ()) -> T:
    """Checks that the MLflow store can be written, runs ``validate``,
    checks that ``work_dir`` can be written and ``data_root`` read when
    they are in object storage, starts or joins Ray (see
    :func:`connect_ray`) and checks the worker group fits (Ray's driver
    logging its info lines only when ``verbose``); returns what
    ``validate`` returned, or raises the :class:`PLNLPError` of bad input.
    SIGINT or SIGTERM meanwhile stops the process (see
    :func:`pipelines.runtime.interrupts.stop`). The modules named in
    ``beside`` (the job's own, which import torch and PyG) are imported
    while Ray starts
    (:func:`~pipelines.runtime.background_imports.imported_beside`); this
    module imports neither."""
    keep_home_clean()
    guard = SignalGuard()
    try:
        with guard:
            check_tracking_store(tracking_uri())
            value = validate()
            check_storage(work_dir, data_root)
            if workers.num_workers < 1 or (workers.cpus_per_worker or 1) < 1:
                raise PLNLPError("--num-workers and --cpus-per-worker must be at least 1.")
            connect_ray(logging.INFO if verbose else logging.WARNING, beside)
            check_resources(sized_workers(workers))
    except KeyboardInterrupt as interrupt:
        stop(guard, interrupt)
    return value


def check_storage(work_dir: str | None, data_root: str | None) -> None:
    """Refuses, before any work, a ``--work-dir`` in object storage that
    cannot be written and a ``--data-root`` there that cannot be listed."""
    if work_dir and is_uri(work_dir):
        check_writable(Location(work_dir), "--work-dir")
    if data_root and is_uri(data_root):
        check_listable(Location(data_root), "--data-root")


def check_resources(workers: WorkerGroup) -> None:
    """Refuses a worker group the cluster can never hold (it would wait forever)."""
    available = ray.cluster_resources()
    fixes = {"CPU": "lower --num-workers or --cpus-per-worker",
             "GPU": "lower --num-workers or drop --use-gpu"}
    for name, amount in workers.resources().items():
        if available.get(name, 0) < amount:
            raise PLNLPError(f"{workers.num_workers} workers need {amount:g} {name}s but the Ray "
                             f"cluster has {available.get(name, 0):g}; {fixes[name]}.")
