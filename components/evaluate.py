"""Stage ``evaluate``: OGB's Evaluator (AUC and Hits@K for own graphs) on
the best checkpoint (see :func:`components.final_export.finish`), or on a
classic heuristic's scores, with HeaRT's MRR and Hits@K when given HeaRT's
negatives (see :mod:`components.heart`)."""
import ray
import torch
from torch import Tensor

from components.artifacts import DatasetArtifact, HeartArtifact, TrainArtifact
from components.heart import read_heart_negatives
from components.scheduling import ANYWHERE
from components.storage.location import local_copy
from components.storage.parquet_io import read_split
from components.storage.stage_cache import local_entry
from components.training.checkpoints import CHECKPOINT_FILE
from plnlp_core.assembly import build_input_adjacency, build_model, input_edges
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.nn import PLNLPModel
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heart import heart_split_metrics
from plnlp_core.scoring.heuristics import adjacency, heuristic_scorer
from plnlp_core.training import resolve_precision, set_matmul_precision


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
def evaluate_heuristic(
    dataset: DatasetArtifact, name: str, config: PLNLPConfig, heart: HeartArtifact | None = None,
) -> dict[str, float]:
    """Validation and test metrics of the heuristic ``name`` (``cn``, ``aa``,
    ``ra``) over the graph training starts from (``config``'s observed
    edges), keyed ``final_<split>_<metric>`` as a trained model's; with
    ``heart``, its HeaRT metrics too."""
    split = read_split(local_entry(dataset.directory))
    edges, _ = input_edges(split, config)
    scorer = heuristic_scorer(name, adjacency(edges, split.num_nodes))
    metrics = scorer_metrics(scorer, split)
    if heart is not None:
        metrics.update(heart_split_metrics(scorer, read_heart_negatives(heart)))
    return {f"final_{key}": value for key, value in metrics.items()}
