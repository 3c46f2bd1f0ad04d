"""The main job: load -> augment -> train -> evaluate, on Ray, into MLflow.

    python pipelines/run.py --dataset ddi --preset smoke
    python pipelines/run.py --dataset my_edges.csv [--model heuristic:ra]

Runs on the Ray cluster at ``RAY_ADDRESS`` (else a local Ray it starts) and
records to MLflow at ``MLFLOW_TRACKING_URI`` (else MLflow's local SQLite file).
From Python, :func:`run_job` runs the same job with a
:class:`~pipelines.planning.request.RunRequest`::

    from pipelines.planning.request import RunRequest
    from pipelines.run import run_job

    result = run_job(RunRequest("ddi", preset="smoke"), encoder=GINLayer)
    print(result.run_id, result.metrics["final_test_hits_20"])
"""
import contextlib
import dataclasses
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.train.startup import mark_command_start
from pipelines.planning.arguments import run_request
from pipelines.planning.request import GraphFlags, RunPlan, RunRequest
from pipelines.planning.run_plan import plan_run
from pipelines.runtime.collection_pause import start_without_collections
from pipelines.runtime.process_exit import skip_final_collection
from plnlp_core.choices import PART_KINDS
from plnlp_core.errors import PLNLPError
from plnlp_core.parts.import_path import import_path_of

if TYPE_CHECKING:  # the stages load only once the arguments are valid
    from components.artifacts import DatasetArtifact, HeartArtifact
    from components.storage.location import Location
    from pipelines.runtime.storage_roots import StorageRoots

# The job's modules (torch, PyG, MLflow's client, the stages): imported while Ray starts
JOB_MODULES = ("pipelines.runtime.job", "components.train.training_actor",
               "components.train_and_evaluate", "components.heart", "components.evaluate",
               "components.load", "pipelines.runtime.load_stage")


@dataclass(frozen=True)
class RunResult:
    """What a finished run gives :func:`run_job`'s caller.

    Attributes:
        run_id (str): Its MLflow run.
        metrics (dict): Its final metrics (``final_test_hits_20``, ...; with
            ``runs`` > 1, their ``_mean`` and ``_std`` over the seeds).
        main_metric (str): The validation metric that chose its best epoch
            (``hits_20``).
    """

    run_id: str
    metrics: dict[str, float]
    main_metric: str


class RunFailed(RuntimeError):
    """The run started and failed: its MLflow run is marked FAILED with the
    reason in its ``failure_reason`` tag, and the ``error:`` line said it."""


def pipeline(plan: RunPlan) -> dict[str, float]:
    """:func:`score`, then the run's description: the settings that differ
    from the preset, and the final metrics."""
    from components.recording.run_records import describe_run

    final = score(plan)
    describe_run(plan.preset, plan.changed_settings(), final, plan.source.info.main_metric_key)
    return final


def score(plan: RunPlan) -> dict[str, float]:
    """Loads the graph once, then scores it with a heuristic, or trains one
    seed, or ``--runs`` seeds as nested runs whose final metrics are
    summarised as mean and std (:func:`train_seeds`)."""
    loaded = load(plan)
    if plan.model != "plnlp":
        return score_heuristic(plan, loaded)
    if plan.runs == 1:
        from components.recording.reads import active_run_info
        from components.train_and_evaluate import train_and_evaluate

        request = plan.request
        final = train_and_evaluate(loaded.dataset, plan.config, request.workers,
                                   loaded.checkpoints, request.max_failures, heart=loaded.heart)
        register(plan, {active_run_info().run_id: final})
        return final
    return train_seeds(plan, loaded)


@dataclass(frozen=True)
class Loaded:
    """What the seeds of a run share: the graph as the load stage gave it
    (``datasets``: one split a seed where the split is drawn, else one),
    HeaRT's negatives of the first split, the storage roots and where
    checkpoints go."""

    datasets: "tuple[DatasetArtifact, ...]"
    heart: "HeartArtifact | None"
    roots: "StorageRoots"
    checkpoints: "Location"

    @property
    def dataset(self) -> "DatasetArtifact":
        return self.datasets[0]


def load(plan: RunPlan) -> Loaded:
    """The load stage, the host-memory check, the graph's and the settings'
    records (a new run's), and HeaRT's negatives, once for every seed."""
    # Ray, MLflow and the stages load only once the arguments are valid.
    from components.heart import heart_stage
    from components.load import log_graph
    from components.recording.run_records import log_config, log_sources
    from components.storage.location import Location
    from components.train.startup import mark
    from pipelines.runtime.job import check_host_memory
    from pipelines.runtime.load_stage import load_stages
    from pipelines.runtime.storage_roots import StorageRoots

    request = plan.request
    roots = StorageRoots.of(request.work_dir, request.data_root)
    datasets = tuple(load_stages(plan.source, seed_graphs(plan), roots))
    dataset = datasets[0]
    mark("load")
    if plan.model == "plnlp":
        check_host_memory(plan.config, dataset.meta)
    log_graph(dataset)
    if plan.run_id is None:
        log_config(plan.config, plan.params(), heuristic=plan.model != "plnlp")
        log_sources(plan.source.label, *roots.sources())
    heart = heart_stage(dataset, plan.config, request.workers.cpus_per_worker)
    # a resumed run's checkpoints: the URI its tag holds
    checkpoints = Location(plan.checkpoints) if plan.checkpoints else roots.checkpoints
    return Loaded(datasets, heart, roots, checkpoints)


def seed_graphs(plan: RunPlan) -> list[GraphFlags]:
    """The graph of each seed: a new split a seed (split seed
    ``--split-seed + i``) where the split is drawn, as NCN's code draws
    Planetoid's, else the one graph."""
    graph = plan.request.graph
    if not plan.source.info.draws_its_split:
        return [graph]
    return [dataclasses.replace(graph, split_seed=graph.split_seed + i) for i in range(plan.runs)]


def score_heuristic(plan: RunPlan, loaded: Loaded) -> dict[str, float]:
    """The heuristic ``--model`` names, scoring the split's pairs in a Ray
    task with as many CPUs as a worker holds (scipy's sparse products)."""
    import ray

    from components.evaluate import evaluate_heuristic
    from components.recording.run_records import log_metrics

    cpus = plan.request.workers.cpus_per_worker
    final = ray.get(evaluate_heuristic.options(num_cpus=cpus).remote(
        loaded.dataset, plan.model.split(":")[1], plan.config, loaded.heart))
    log_metrics(final)
    return final


def train_seeds(plan: RunPlan, loaded: Loaded) -> dict[str, float]:
    """``--runs`` seeds, each a nested run that prints its line as it ends
    (a resumed run goes on with its unfinished seeds); the summary's mean
    and std logged, the best seed's model registered, each seed's
    validation drawn in one figure."""
    from components.recording.reads import active_run_info
    from components.recording.run_records import log_metrics, log_validation_curves
    from components.recording.seed_summary import seed_line, summary_metrics

    finals, children = [], {}
    for i in range(plan.runs):
        seed = plan.config.seed + i
        if seed in plan.finished:
            children[seed], final = plan.children[seed], plan.finished[seed]
        else:
            children[seed], final = train_seed(plan, loaded, i)
        finals.append(final)
        print(seed_line(seed, final, plan.source.info.main_metric_key), flush=True)
    summary = summary_metrics(finals)
    log_metrics(summary)
    register(plan, {children[plan.config.seed + i]: final for i, final in enumerate(finals)})
    log_validation_curves({f"seed {seed}": run_id for seed, run_id in sorted(children.items())},
                          plan.source.info.main_metric_key,
                          f"{active_run_info().run_name}: validation of each seed",
                          "seeds_valid_curve.png")
    return summary


def train_seed(plan: RunPlan, loaded: Loaded, i: int) -> tuple[str, dict[str, float]]:
    """Seed ``seed + i`` in its nested run (a new one, or the one a resumed
    run left unfinished): its run id and final metrics, on its own split
    where the split is drawn (:func:`seed_graphs`)."""
    from components.heart import heart_stage
    from components.recording.run_lifecycle import start_run
    from components.recording.run_records import clear_failure, log_config
    from components.train_and_evaluate import train_and_evaluate

    request, seeded = plan.request, plan.config.replace(seed=plan.config.seed + i)
    resumed = plan.children.get(seeded.seed)
    name = None if resumed else plan.run_name(f"seed{seeded.seed}")
    with start_run(run_id=resumed, run_name=name, nested=True) as child:
        if resumed is None:
            log_config(seeded, plan.params())
        dataset, heart = loaded.dataset, loaded.heart
        if i and len(loaded.datasets) > 1:
            dataset = loaded.datasets[i]
            heart = heart_stage(dataset, plan.config, request.workers.cpus_per_worker)
        final = train_and_evaluate(dataset, seeded, request.workers, loaded.checkpoints,
                                   request.max_failures, heart=heart)
        if resumed is not None:
            clear_failure()
        return child.info.run_id, final


def register(plan: RunPlan, finals: dict[str, dict[str, float]]) -> None:
    """With ``--register NAME``, registers the model of the run (of
    ``finals``, run id to final metrics) with the best validation metric."""
    if plan.request.register is None:
        return
    from components.recording.model_export import register_link_model

    metric = f"final_valid_{plan.source.info.main_metric_key}"
    best = max(finals, key=lambda run_id: finals[run_id][metric])
    print(register_link_model(best, plan.request.register, metric), flush=True)


def run_job(request: RunRequest, **parts: type | str) -> RunResult:
    """Runs the main job ``request`` asks for, as ``pipelines/run.py`` does
    with the flags that make it (its epoch lines included), from a notebook or
    a script. ``parts`` names parts of one's own (``encoder=``,
    ``predictor=``, ``loss=``, ``sampler=``) by their class or import path,
    over ``request``'s settings; a class is recorded by its import path, so
    it must live in a module Ray's workers can import.

    Raises:
        PLNLPError: Bad input, refused before any work (no MLflow run).
        RunFailed: The run failed after it started.
    """
    mark_command_start(time.time())
    return launch(with_parts(request, parts))


def with_parts(request: RunRequest, parts: dict[str, type | str]) -> RunRequest:
    """``request`` with ``parts`` (kind to class or import path) as ``--set``s."""
    unknown = sorted(set(parts) - set(PART_KINDS))
    if unknown:
        raise PLNLPError(f"run_job takes parts as {', '.join(f'{k}=' for k in PART_KINDS)}; "
                         f"not {', '.join(unknown)}.")
    named = [f"{kind}={import_path_of(kind, part) if isinstance(part, type) else part}"
             for kind, part in parts.items()]
    return dataclasses.replace(request, overrides=(*request.overrides, *named))


def launch(request: RunRequest, own_process: bool = False) -> RunResult:
    """Plans ``request``, starts the services and runs the job in its MLflow
    run (:func:`run_job` without the command's start mark and parts), the
    start without garbage collections (frozen after it in a command's
    ``own_process``: :mod:`pipelines.runtime.collection_pause`)."""
    with start_without_collections(own_process):
        plan = plan_run(request)
        from components.train.startup import mark
        from pipelines.runtime.console import quiet_console
        from pipelines.runtime.ray_cluster import sized_workers
        from pipelines.runtime.services import start_services

        start_services(lambda: plan, request.workers, request.verbose, request.work_dir,
                       request.data_root, beside=JOB_MODULES)
        mark("ray")
        from components.train.training_actor import training_actor_started  # loaded beside Ray
        from pipelines.runtime.job import execute

    quiet_console(request.verbose)
    plan.request = dataclasses.replace(plan.request,
                                       workers=sized_workers(plan.request.workers))
    trains = plan.model == "plnlp"
    # the actor's imports go on beside the first stages
    with training_actor_started(plan.request.workers) if trains else contextlib.nullcontext():
        outcome = execute(plan.experiment, plan.run_name(), request.work_dir,
                          lambda work: pipeline(plan), plan.run_id, request.verbose)
    if outcome is None:
        raise RunFailed("the run failed; its error: line and its MLflow run's failure_reason "
                        "tag say why")
    return RunResult(*outcome, plan.source.info.main_metric_key)


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    # A command starts with its process; a call from Python (a notebook, the benchmark) at the call.
    mark_command_start(None if argv is None else time.time())
    request = run_request(argv)
    try:
        result = launch(request, own_process=argv is None)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RunFailed:
        return 1
    from pipelines.runtime.console import print_summary

    print_summary(result.run_id, result.metrics, result.main_metric)
    return 0


if __name__ == "__main__":
    sys.exit(main())
