"""How a :class:`~pipelines.planning.request.SweepRequest` becomes, in one
pass of :func:`plan_sweep`, a :class:`~pipelines.planning.request.SweepPlan`:
the graph it names, the :class:`~pipelines.planning.sweep_space.SearchSpace`
to run with each trial's resources, and its MLflow experiment: the
``--space`` file with the command line's settings on top, or, with
``resume``, the interrupted sweep as its run recorded it (looked up in
MLflow, imported only then, so that ``--help`` and a refused setting answer
at once). What the Ray cluster must hold for it is checked by
:func:`check_cluster` once Ray has started."""
import dataclasses
import os
from pathlib import Path

from components.recording.tags import (
    DATA_ROOT_TAG,
    DATASET_TAG,
    SEARCH_SPACE_FILE,
    TUNE_STATE_TAG,
    WORK_DIR_TAG,
)
from pipelines.planning.presets import load_preset, parse_overrides, read_mapping
from pipelines.planning.request import GraphSource, SweepPlan, SweepRequest
from pipelines.planning.run_plan import graph_source
from pipelines.planning.sweep_space import SearchSpace
from plnlp_core.config import PLNLPConfig, with_graph_node_input
from plnlp_core.errors import PLNLPError

# What the sweep's own settings are; --resume takes the sweep's.
SWEEP_FLAGS = {"overrides": "--set", "num_samples": "--num-samples",
               "max_concurrent": "--max-concurrent", "num_workers": "--num-workers",
               "cpus_per_worker": "--cpus-per-worker", "gpus_per_worker": "--gpus-per-worker",
               "trials_per_gpu": "--trials-per-gpu", "experiment": "--experiment"}


def read_space(request: SweepRequest, source: GraphSource) -> SearchSpace:
    """The ``--space`` file with the command line's settings on top."""
    data = read_mapping(request.space, "search space")
    preset = data.get("preset", source.default_preset)
    settings = with_graph_node_input({**load_preset(source.presets, preset),
                                      **parse_overrides(request.overrides)},
                                     source.info.feature_dim)
    base = PLNLPConfig.from_mapping({**settings, "dataset": source.info.name})
    counts = {"num_samples": request.num_samples, "max_concurrent": request.max_concurrent}
    data.update({key: value for key, value in counts.items() if value is not None})
    resources = {"workers": request.num_workers, "cpus_per_worker": request.cpus_per_worker,
                 "gpus_per_worker": gpus_per_worker(request)}
    return SearchSpace(request.space, base, source.info, data,
                       {key: value for key, value in resources.items() if value is not None},
                       preset)


def gpus_per_worker(request: SweepRequest) -> float | None:
    """``--gpus-per-worker``, or the share of a GPU ``--trials-per-gpu`` gives
    (``auto``: a whole GPU until the sweep has packed its trials, see
    :mod:`pipelines.planning.gpu_packing`)."""
    shared = request.trials_per_gpu
    if shared is None:
        return request.gpus_per_worker
    if request.gpus_per_worker is not None:
        raise PLNLPError("--trials-per-gpu and --gpus-per-worker both say how much of a GPU a "
                         "trial holds; give one of them.")
    if shared == "auto":
        return 1.0
    if shared < 1:
        raise PLNLPError(f"--trials-per-gpu is {shared}; give a whole number of trials of at "
                         "least 1.")
    return 1 / shared


def check_resume_flags(request: SweepRequest) -> None:
    """Refuses, with ``--resume``, the flags that set what the sweep set."""
    given = [flag for key, flag in SWEEP_FLAGS.items() if getattr(request, key)]
    if request.resume is not None and given:
        raise PLNLPError(f"--resume goes on with the sweep's own settings; drop "
                         f"{', '.join(given)}.")


def plan_sweep(request: SweepRequest) -> SweepPlan:
    """The plan of ``request``: its graph, the ``--space`` file read with
    the command line's settings on top, and its experiment; or, with
    ``resume``, the sweep that goes on (:func:`resumed_request`,
    :func:`resumed_sweep`)."""
    check_resume_flags(request)
    request = resumed_request(request)
    source = graph_source(request.dataset, request.graph)
    if request.resume is not None:
        return SweepPlan(request, source, *resumed_sweep(request, source))
    return SweepPlan(request, source, read_space(request, source),
                     request.experiment or f"plnlp-{source.info.name}-tune")


def check_cluster(plan: SweepPlan, available: dict[str, float]) -> None:
    """Refuses a sweep the Ray cluster, of ``available`` resources, cannot
    run: trials sharing GPUs on a cluster without any, or a trial larger
    than the cluster (it would wait forever)."""
    shared = plan.request.trials_per_gpu
    if shared is not None and not available.get("GPU"):
        raise PLNLPError(f"--trials-per-gpu {shared} shares GPUs among trials and the Ray "
                         "cluster has none; drop it to train on CPUs.")
    plan.space.check_cluster(available)


def resumed_request(request: SweepRequest) -> SweepRequest:
    """With ``--resume``, ``request`` with what the sweep's run recorded where
    the flags say nothing: its dataset, data root and work folder, so that
    the run id (and the tracking URI) is all it needs, from any folder."""
    if request.resume is None:
        return request
    run = _sweep_run(request.resume)
    tags = run.data.tags
    return dataclasses.replace(
        request, dataset=request.dataset or tags.get(DATASET_TAG) or run.data.params.get(
            "dataset", ""), data_root=request.data_root or tags.get(DATA_ROOT_TAG),
        work_dir=request.work_dir or tags.get(WORK_DIR_TAG))


def _sweep_run(run_id: str) -> object:
    """The MLflow run ``--resume`` names, from a store that must exist
    (reading one creates it), without MLflow's download bars."""
    from components.recording.reads import find_run, tracking_uri
    from components.recording.tracking_store import check_store_exists, check_tracking_store

    check_store_exists(tracking_uri())
    check_tracking_store(tracking_uri())  # a server that does not answer: at once
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    return find_run(run_id, "give --resume the id of a sweep run of this tracking store (see "
                    "mlflow ui)")


def resumed_sweep(request: SweepRequest, source: GraphSource) -> tuple[SearchSpace, str]:
    """Looks ``--resume`` up: a sweep's run of this tracking store (which
    must exist: reading one creates it) that swept ``source``'s graph, has
    not finished and still has its Ray Tune state. Returns its search space,
    rebuilt from what the run recorded, and its experiment's name."""
    from ray import tune

    from components.recording.driver_presence import refuse_a_driven_run
    from components.recording.reads import experiment_name
    from components.storage.location import Location

    run = _sweep_run(request.resume)
    params = run.data.params
    if "searched" not in params:
        raise PLNLPError(f"run {request.resume} is not a sweep; give --resume the sweep's run (a "
                         "trial's parent), or go on with a single run with pipelines/run.py "
                         "--resume.")
    if params.get("dataset") != source.info.name:
        raise PLNLPError(f"sweep {request.resume} swept {params.get('dataset')}, not "
                         f"{source.info.name}; resume it with --dataset {params.get('dataset')}.")
    if run.info.status == "FINISHED":
        raise PLNLPError(f"sweep {request.resume} has already finished; start a new sweep instead "
                         "of --resume.")
    refuse_a_driven_run(run)
    state = run.data.tags.get(TUNE_STATE_TAG)
    if state is None or not tune.Tuner.can_restore(*Location(state).ray_storage()):
        raise PLNLPError(f"sweep {request.resume} cannot go on: its Ray Tune state is gone "
                         f"({state or 'the sweep recorded none'}); start a new sweep.")
    return recorded_space(run, source), experiment_name(run.info.experiment_id)


def recorded_space(run: object, source: GraphSource) -> SearchSpace:
    """A sweep's search space as its run recorded it: the file, the counts
    and resources the command line set, and the settings not searched."""
    from components.recording.reads import downloaded, run_settings

    params = run.data.params
    with downloaded(run.info.run_id, SEARCH_SPACE_FILE) as path:
        data = read_mapping(path, "search space")
    settings = run_settings(run.info.run_id)
    data["num_samples"] = int(params["num_samples"])
    if params["max_concurrent"] != "cluster":
        data["max_concurrent"] = int(params["max_concurrent"])
    resources = {"workers": int(params["trial_workers"]),
                 "cpus_per_worker": int(params["trial_cpus_per_worker"]),
                 "gpus_per_worker": float(params["trial_gpus_per_worker"])}
    return SearchSpace(Path(params["search_space"]), PLNLPConfig.from_mapping(settings),
                       source.info, data, resources, params.get("preset"))
