"""What each step of the Kubeflow pipeline (``pipelines/kubeflow.py``) does,
in plain Python: the stages of ``pipelines/run.py`` on the folders kfp gives
a step for its inputs and outputs. Nothing here imports kfp, whose ``dsl``
holds only its artifact types inside a running step.

Each step reads its settings as ``pipelines/run.py`` does, checks the MLflow
store and starts or joins Ray (``RAY_ADDRESS``) first; a refusal prints one
``error:`` line and exits 2, a failed run (marked FAILED in MLflow) exits 1.
"""
import argparse
import shutil
from collections.abc import Callable
from pathlib import Path

import yaml

from components.artifacts import DatasetArtifact, DatasetMeta, TrainArtifact, WalkArtifact
from components.augment import augment
from components.checkpoints import checkpoint_root
from components.stage_cache import local_entry, stage_cache_root
from components.storage import Location, local_copy
from components.tracking import log_config, log_graph
from components.train_and_evaluate import evaluate_and_log_model, run_checkpoints, train_in_run
from pipelines.arguments import parse_args, worker_group
from pipelines.console import quiet_console
from pipelines.job import execute, prepare
from pipelines.load_stage import load_stage
from pipelines.plan import plan_run, run_params
from pipelines.run import run_name
from pipelines.settings import graph_source
from plnlp_core.config import PLNLPConfig

CONFIG_FILE = "config.yaml"


def command_line(dataset: str, preset: str = "", overrides: list[str] | None = None,
                 **flags: object) -> list[str]:
    """The pipeline's parameters as a command line of ``pipelines/run.py``
    (or ``tune.py``): ``flags`` by name (``data_root`` is ``--data-root``),
    ``True`` as a bare flag; ``False``, ``""`` and ``None`` left out."""
    argv = ["--dataset", dataset, *(["--preset", preset] if preset else [])]
    argv += [arg for override in overrides or [] for arg in ("--set", override)]
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is not False and value not in ("", None):
            argv += [flag, str(value)]
    return argv


def stage_args(dataset: str, preset: str = "", overrides: list[str] | None = None,
               **flags: object) -> argparse.Namespace:
    """The step's settings, read by ``pipelines/run.py``'s parser."""
    return parse_args(command_line(dataset, preset, overrides, **flags))


def start(args: argparse.Namespace, validate: Callable[[], object]) -> object:
    """Checks the MLflow store, runs ``validate``, starts or joins Ray and
    checks the worker group fits (see :func:`pipelines.job.prepare`);
    returns what ``validate`` returned, or exits 2 after the ``error:`` line."""
    value = prepare(validate, worker_group(args), args.verbose, args.work_dir, args.data_root)
    if value is None:
        raise SystemExit(2)
    quiet_console(args.verbose)
    return value


def load_step(dataset: str, data_root: str, work_dir: str, out: str) -> None:
    """The ``load`` stage's splits of ``dataset``, copied from the stage
    cache to ``out``."""
    args = stage_args(dataset, data_root=data_root, work_dir=work_dir)
    source = start(args, lambda: graph_source(args))
    shutil.copytree(local_entry(load_stage(args, source).directory), out)


def augment_step(splits: str, args: argparse.Namespace, out: str) -> WalkArtifact:
    """The ``augment`` stage's walk pairs of the config ``args`` give,
    copied from the stage cache to ``out``; without random walks, an empty
    ``out`` of 0 rounds."""
    config = start(args, lambda: plan_run(args)).config
    if not config.uses_random_walk:
        Path(out).mkdir(parents=True)
        return WalkArtifact(out, 0, 0)
    walks = augment(split_artifact(splits), config, stage_cache_root(args.work_dir))
    shutil.copytree(local_entry(walks.directory), out)
    return WalkArtifact(out, walks.num_pairs, walks.rounds)


def train_step(
    splits: str, walks: WalkArtifact, args: argparse.Namespace, out: str,
) -> tuple[str, TrainArtifact]:
    """Trains the config ``args`` give in a new MLflow run, logging its
    settings, epochs, best checkpoint and learning curve as
    ``pipelines/run.py`` does; the best checkpoint and its ``config.yaml``
    go to ``out``. Returns the run's id and the training's artifact."""
    plan = start(args, lambda: plan_run(args))
    dataset, workers = split_artifact(splits), worker_group(args)

    def job(work: Location) -> TrainArtifact:
        log_graph(dataset)
        log_config(plan.config, run_params(args, plan))
        with run_checkpoints(checkpoint_root(args.work_dir)) as storage:
            trained = train_in_run(dataset, walks if walks.rounds else None, plan.config,
                                   workers, storage, args.max_failures)
            with local_copy(trained.checkpoint_dir) as checkpoint:
                shutil.copytree(checkpoint, out)
            (Path(out) / CONFIG_FILE).write_text(yaml.safe_dump(plan.config.to_dict(),
                                                                sort_keys=False))
        return trained

    return _finished(execute(args.experiment or f"plnlp-{plan.source.info.name}",
                             run_name(args, plan), args.work_dir, job))


def evaluate_step(splits: str, model: str, run_id: str, experiment: str) -> dict[str, float]:
    """The ``final_*`` metrics and the MLflow ``model`` of the checkpoint in
    ``model`` (with its ``config.yaml``), logged to the MLflow run
    ``run_id``, which then ends FINISHED."""
    config = PLNLPConfig.from_mapping(yaml.safe_load((Path(model) / CONFIG_FILE).read_text()))
    start(stage_args(config.dataset), lambda: config)
    dataset = split_artifact(splits)

    def job(work: Location) -> dict[str, float]:
        return evaluate_and_log_model(dataset, TrainArtifact(model, 0, {}), config, work)

    _, final = _finished(execute(experiment or f"plnlp-{config.dataset}", "", None, job, run_id))
    return final


def split_artifact(directory: str) -> DatasetArtifact:
    """The ``load`` step's output as the stages take it."""
    return DatasetArtifact(directory, DatasetMeta.read(Path(directory)))


def _finished(outcome: tuple | None) -> tuple:
    """What :func:`pipelines.job.execute` returned; exits 1 when the run
    failed (it printed the reason)."""
    if outcome is None:
        raise SystemExit(1)
    return outcome
