"""The classic heuristics as the benchmarks' baselines: a heuristic's
metrics on a split, keyed as a model's. The product scores heuristics
through :mod:`components.evaluate`; this is the benchmarks' shortcut."""
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heuristics import HEURISTICS, adjacency, heuristic_scorer


def heuristic_metrics(name: str, split: LinkSplit, edges: Tensor | None = None,
                      batch_size: int = 16384) -> dict[str, float]:
    """The valid and test metrics of heuristic ``name`` on ``split``, keyed as
    :func:`plnlp_core.scoring.evaluation.evaluate` keys them (``valid_hits_20``,
    ``test_auc``, ...), on the graph of ``edges`` (default: the training
    edges; pass the validation edges too where they are an input)."""
    HEURISTICS.get(name)  # an unknown name fails before the graph is built
    adj = adjacency(split.train_pos if edges is None else edges, split.num_nodes)
    return scorer_metrics(heuristic_scorer(name, adj, batch_size), split)
