r"""What each step of the Kubeflow pipeline does, in plain Python (its kfp
shells are in ``kfp_components.py``): the stages of ``pipelines/run.py`` on the
folders kfp gives a step for its inputs and outputs, and the sweep as
``pipelines/tune.py`` plans and runs it. Nothing here imports kfp, whose ``dsl``
holds only its artifact types inside a running step.

Each step reads its settings as ``pipelines/run.py`` does, checks the MLflow
store and starts or joins Ray (``RAY_ADDRESS``) first; a refusal prints one
``error:`` line and exits 2, a failed run (marked FAILED in MLflow) exits 1.
The folders kfp gives and the ``--work-dir``/``--data-root`` texts become
:class:`~components.storage.location.Location`\ s here, as the stages take them.
"""
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from components.artifacts import DatasetArtifact, TrainArtifact, WalkArtifact
from components.augment import augment
from components.evaluate import evaluate_and_log_model
from components.heart import heart_stage
from components.load import log_graph
from components.recording.run_records import log_config
from components.storage.location import Location, local_copy
from components.storage.split_meta import DatasetMeta
from components.storage.stage_cache import local_entry, stage_cache_root
from components.train_and_evaluate import run_checkpoints, train_in_run
from pipelines.planning.request import RunRequest, SweepRequest
from pipelines.planning.run_plan import graph_source, plan_run
from pipelines.planning.sweep_plan import plan_sweep
from pipelines.runtime.console import quiet_console
from pipelines.runtime.job import execute
from pipelines.runtime.kubeflow.step_request import step_request
from pipelines.runtime.load_stage import load_stage
from pipelines.runtime.process_exit import skip_final_collection
from pipelines.runtime.services import prepare
from pipelines.runtime.storage_roots import StorageRoots
from pipelines.runtime.sweep import run_sweep
from plnlp_core.config import PLNLPConfig
from plnlp_core.errors import PLNLPError

CONFIG_FILE = "config.yaml"


def start(request: RunRequest, validate: Callable[[], object]) -> object:
    """Checks the MLflow store, runs ``validate``, starts or joins Ray and
    checks the worker group fits (see :func:`pipelines.runtime.services.prepare`);
    returns what ``validate`` returned, or exits 2 after the ``error:`` line."""
    value = prepare(validate, request.workers, request.verbose, request.work_dir,
                    request.data_root)
    if value is None:
        raise SystemExit(2)
    quiet_console(request.verbose)
    return value


def load_step(dataset: str, data_root: str, work_dir: str, out: str) -> None:
    """The ``load`` stage's splits of ``dataset``, copied from the stage
    cache to ``out``."""
    request = step_request(dataset, data_root=data_root, work_dir=work_dir)
    source = start(request, lambda: graph_source(request.dataset, request.graph))
    loaded = load_stage(source, request.graph, StorageRoots.of(request.work_dir, request.data_root))
    shutil.copytree(local_entry(loaded.directory), out)


def augment_step(splits: str, request: RunRequest, out: str) -> WalkArtifact:
    """The ``augment`` stage's walk pairs of the config ``request`` names,
    copied from the stage cache to ``out``; without random walks, an empty
    ``out`` of 0 rounds."""
    config = start(request, lambda: plan_run(request)).config
    if not config.uses_random_walk:
        Path(out).mkdir(parents=True)
        return WalkArtifact(Location(out), 0, 0)
    walks = augment(split_artifact(splits), config, StorageRoots.of(request.work_dir).stages)
    shutil.copytree(local_entry(walks.directory), out)
    return WalkArtifact(Location(out), walks.num_pairs, walks.rounds)


def train_step(
    splits: str, walks: WalkArtifact, request: RunRequest, out: str,
) -> tuple[str, TrainArtifact]:
    """Trains the config ``request`` names in a new MLflow run, logging its
    settings, epochs, best checkpoint and learning curve as
    ``pipelines/run.py`` does; the best checkpoint and its ``config.yaml``
    go to ``out``. Returns the run's id and the training's artifact."""
    plan = start(request, lambda: plan_run(request))
    dataset = split_artifact(splits)

    def job(work: Location) -> TrainArtifact:
        plan.config.validate_graph(dataset.meta.num_nodes, dataset.meta.categories)
        log_graph(dataset)
        log_config(plan.config, plan.params())
        with run_checkpoints(StorageRoots.of(request.work_dir).checkpoints) as storage:
            trained = train_in_run(dataset, walks if walks.rounds else None, plan.config,
                                   request.workers, storage, request.max_failures)
            with local_copy(trained.checkpoint_dir) as checkpoint:
                shutil.copytree(checkpoint, out)
            (Path(out) / CONFIG_FILE).write_text(yaml.safe_dump(plan.config.to_dict(),
                                                                sort_keys=False))
        return trained

    return _finished(execute(plan.experiment, plan.run_name(), request.work_dir, job))


def evaluate_step(splits: str, model: str, run_id: str, experiment: str) -> dict[str, float]:
    """The ``final_*`` metrics and the MLflow ``model`` of the checkpoint in
    ``model`` (with its ``config.yaml``), logged to the MLflow run
    ``run_id``, which then ends FINISHED; HeaRT's too when the config asks
    (its negatives built in, or reused from, this machine's stage cache)."""
    config = PLNLPConfig.from_mapping(yaml.safe_load((Path(model) / CONFIG_FILE).read_text()))
    start(step_request(config.dataset), lambda: config)
    dataset = split_artifact(splits)

    def job(work: Location) -> dict[str, float]:
        return evaluate_and_log_model(dataset, TrainArtifact(Location(model), 0, {}), config, work,
                                      heart_stage(dataset, config, cache_root=stage_cache_root()))

    _, final = _finished(execute(experiment or f"plnlp-{config.dataset}", "", None, job, run_id))
    return final


def sweep_step(request: SweepRequest) -> None:
    """The sweep ``request`` asks for, planned and run as
    ``pipelines/tune.py`` plans and runs it (see
    :func:`pipelines.runtime.sweep.run_sweep`); exits 2 when refused, 1
    when it failed."""
    skip_final_collection()
    try:
        plan = plan_sweep(request)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    if (code := run_sweep(plan)) != 0:
        raise SystemExit(code)


def split_artifact(directory: str) -> DatasetArtifact:
    """The ``load`` step's output (the folder kfp gives) as the stages take it."""
    return DatasetArtifact(Location(directory), DatasetMeta.read(Path(directory)))


def _finished(outcome: tuple | None) -> tuple:
    """What :func:`pipelines.runtime.job.execute` returned; exits 1 when the run
    failed (it printed the reason)."""
    if outcome is None:
        raise SystemExit(1)
    return outcome
