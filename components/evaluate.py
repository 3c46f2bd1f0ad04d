"""Stage ``evaluate``, everything after training: OGB's Evaluator (AUC and
Hits@K for own graphs) and, when given HeaRT's negatives (see
:mod:`components.heart`), HeaRT's MRR and Hits@K, as a run's ``final_*``
metrics; for a trained model also its
:class:`plnlp_core.scoring.link_scorer.LinkScorer` and the final files the
driver logs. Every finish goes through :func:`finish`, the one place the
``final_`` keys are made: a trained model's (:func:`finish_model`) and a
classic heuristic's (:func:`evaluate_heuristic`).

A trained model's ``final_*`` metrics and scorer lie side by side in the
run's checkpoint storage (which the driver sees: a shared folder or object
storage). The main job's training worker writes them itself once training
ends (:func:`export_best`): it holds the split, the input graph and the
best model on its device already, so the run needs no evaluation task to
start a process, import torch and read the split again (6.5 s of a 44 s
ddi ``smoke`` run on 2 cores). The best epoch's evaluation is the final
one there: the same state, graph and evaluation an evaluation of the
checkpoint would run (``tests/components/test_stages.py`` checks that the
two agree). The kubeflow pipeline's separate evaluate step writes the same
files from the checkpoint (the Ray task :func:`evaluate_and_export`); both
go through :func:`finish_model`. The driver then logs them
(:func:`log_final`) through the recording wing.

:data:`FINAL_FILE` is written last, so its presence means the scorer is
whole; :func:`clear_final` removes an earlier attempt's before training.

The Train worker imports this module (:func:`export_best`), so MLflow and
the recording wing load only inside the driver's functions that log.
"""
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import ray
import torch
from torch import Tensor, nn

from components.artifacts import (
    CHECKPOINT_FILE,
    DatasetArtifact,
    HeartArtifact,
    TrainArtifact,
)
from components.heart import read_heart_negatives
from components.scheduling import ANYWHERE
from components.storage.location import Location, local_copy, node_scratch_dir
from components.storage.parquet_io import read_node_ids, read_split
from components.storage.stage_cache import local_entry
from plnlp_core.assembly import build_input_adjacency, build_model, input_edges
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.errors import PLNLPError
from plnlp_core.nn import PLNLPModel
from plnlp_core.nn.model import unwrap
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heart import HardNegatives, heart_split_metrics
from plnlp_core.scoring.heuristics import adjacency, heuristic_scorer
from plnlp_core.scoring.link_scorer import LinkScorer
from plnlp_core.training.epoch import resolve_precision, set_matmul_precision

FINAL_FILE = "final.json"
SCORER_DIR = "scorer"
HEART_BATCH_SIZE = 2**16
"""Pairs a batch of HeaRT's scoring when the caller names none (a heuristic's)."""


def finish(
    score: Callable[[Tensor], Tensor], split: LinkSplit, metrics: dict[str, float] | None = None,
    heart_negatives: HardNegatives | None = None, heart_batch_size: int = HEART_BATCH_SIZE,
) -> dict[str, float]:
    """A run's ``final_<split>_<metric>`` metrics, the same for a trained
    model and a heuristic: ``metrics`` when the caller has them (the best
    epoch's evaluation), else ``score``'s over ``split``; with
    ``heart_negatives``, HeaRT's metrics of ``score`` too (in batches of
    ``heart_batch_size`` pairs)."""
    evaluated = scorer_metrics(score, split) if metrics is None else metrics
    if heart_negatives is not None:
        evaluated = {**evaluated, **heart_split_metrics(score, heart_negatives,
                                                        heart_batch_size)}
    return {f"final_{key}": value for key, value in evaluated.items()}


def finish_model(
    model: nn.Module, split: LinkSplit, adj: Tensor, config: PLNLPConfig, node_ids: NodeIds,
    directory: Location, metrics: dict[str, float] | None = None,
    heart_negatives: HardNegatives | None = None,
) -> dict[str, float]:
    """A trained model's finish, the same for the main job and the kubeflow
    pipeline: its scorer encoded over ``adj``, its :func:`finish` scored by
    the scorer (HeaRT's in batches of ``config.eval_batch_size``), both
    written into ``directory`` by :func:`write_final`. Returns the
    metrics."""
    scorer = LinkScorer.encode(model, split, adj, config, node_ids)
    final = finish(scorer.score, split, metrics, heart_negatives, config.eval_batch_size)
    write_final(directory, final, scorer)
    return final


def export_best(
    model: nn.Module, best_state: dict[str, Tensor], best_metrics: dict[str, float],
    split: LinkSplit, adj: Tensor, config: PLNLPConfig, node_ids: NodeIds,
    directory: Location, heart_negatives: HardNegatives | None = None,
) -> None:
    r"""The Train worker's finish: loads ``best_state`` into ``model``
    (unwrapping DDP) and :func:`finish_model`\ es it on the model's device
    with ``best_metrics`` (and ``heart_negatives``)."""
    core = unwrap(model)
    core.load_state_dict(best_state)
    device = next(core.parameters()).device
    finish_model(core, split, adj.to(device), config, node_ids, directory, best_metrics,
                 heart_negatives)


def load_trained(
    dataset: DatasetArtifact, trained: TrainArtifact, config: PLNLPConfig,
) -> tuple[LinkSplit, PLNLPModel, Tensor]:
    """The split, the best checkpoint's model and its input graph, on the
    task's GPU if it has one, with ``config``'s matmul precision set."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    split = read_split(local_entry(dataset.directory))
    adj, _ = build_input_adjacency(split, config)
    model = build_model(config, split.info, split.num_nodes)
    with local_copy(trained.checkpoint_dir) as checkpoint:
        state = torch.load(checkpoint / CHECKPOINT_FILE, weights_only=True, map_location=device)
    model.load_state_dict(state)
    set_matmul_precision(resolve_precision(config.precision, device))
    return split, model.to(device), adj.to(device)


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def evaluate_and_export(
    dataset: DatasetArtifact, trained: TrainArtifact, config: PLNLPConfig, directory: Location,
    heart: HeartArtifact | None = None,
) -> None:
    """The best checkpoint's ``final_*`` metrics and its
    :class:`LinkScorer`, from one reading of the split and the checkpoint,
    written into ``directory`` (storage the driver sees) by
    :func:`finish_model`; with ``heart``, HeaRT's metrics too."""
    split, model, adj = load_trained(dataset, trained, config)
    node_ids = read_node_ids(local_entry(dataset.directory), dataset.meta.num_nodes)
    finish_model(model, split, adj, config, node_ids, directory,
                 heart_negatives=None if heart is None else read_heart_negatives(heart))


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def evaluate_heuristic(
    dataset: DatasetArtifact, name: str, config: PLNLPConfig, heart: HeartArtifact | None = None,
) -> dict[str, float]:
    """Validation and test metrics of the heuristic ``name`` (``cn``, ``aa``,
    ``ra``) over the graph training starts from (``config``'s observed
    edges), keyed ``final_<split>_<metric>`` by :func:`finish` as a trained
    model's; with ``heart``, its HeaRT metrics too."""
    split = read_split(local_entry(dataset.directory))
    edges, _ = input_edges(split, config)
    scorer = heuristic_scorer(name, adjacency(edges, split.num_nodes))
    return finish(scorer, split,
                  heart_negatives=None if heart is None else read_heart_negatives(heart))


def evaluate_and_log_model(
    dataset: DatasetArtifact, trained: TrainArtifact, config: PLNLPConfig,
    directory: Location, heart: HeartArtifact | None = None,
) -> dict[str, float]:
    """The ``final_*`` metrics and the MLflow ``model`` of the checkpoint
    ``trained`` alone (a training whose worker did not export, as the
    kubeflow pipeline's), logged to the active run: one Ray task
    (:func:`evaluate_and_export`) evaluates it and writes its scorer into
    ``directory`` (storage the driver sees), reading the split and the
    checkpoint once; with ``heart``, scored on HeaRT's negatives too.
    Returns the metrics."""
    ray.get(evaluate_and_export.remote(dataset, trained, config, directory, heart))
    return log_final(directory)


def log_final(directory: Location) -> dict[str, float]:
    """Logs the ``final_*`` metrics and the scorer in ``directory`` (see
    :func:`write_final`) as the active run's metrics and ``model``; returns
    the metrics."""
    # The recording wing (MLflow) loads here, in the driver: not in the Train worker.
    from components.recording.model_export import log_link_model
    from components.recording.run_records import log_metrics

    final, id_kind = read_final(directory)
    log_metrics(final)
    with local_copy(directory / SCORER_DIR) as scorer:
        log_link_model(scorer, id_kind)
    return final


def write_final(directory: Location, final: dict[str, float],
                scorer: LinkScorer) -> None:
    """Writes ``scorer`` into ``directory/scorer``, then ``final`` and the
    kind of the scorer's node ids into ``directory/final.json`` (in object
    storage: the scorer's files uploaded from this node, the marker last)."""
    clear_final(directory)
    marker = json.dumps({"metrics": final, "id_kind": scorer.node_ids.kind})
    if directory.is_local:
        scorer.save(directory.local_path() / SCORER_DIR)
    else:
        with tempfile.TemporaryDirectory(prefix="plnlp-scorer-", dir=node_scratch_dir()) as local:
            scorer.save(Path(local))
            (directory / SCORER_DIR).upload(Path(local))
    (directory / FINAL_FILE).write_text(marker)


def read_final(directory: Location) -> tuple[dict[str, float], str]:
    """The ``final_*`` metrics and the node ids' kind :func:`write_final`
    wrote into ``directory``."""
    try:
        final = json.loads((directory / FINAL_FILE).read_text())
    except FileNotFoundError:
        raise PLNLPError(f"training ended without writing its final metrics and model to "
                         f"{directory}; run again with --resume to finish it from its last "
                         "checkpoint.") from None
    return final["metrics"], final["id_kind"]


def clear_final(directory: Location) -> None:
    """Removes what :func:`write_final` wrote into ``directory``, marker first."""
    marker = directory / FINAL_FILE
    if marker.exists():
        marker.filesystem.delete_file(marker.path)
    (directory / SCORER_DIR).remove()
