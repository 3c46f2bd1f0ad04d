"""Link-prediction metrics: OGB's own :class:`Evaluator` (Hits@K, MRR), and
AUC for graphs of one's own."""
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.nn import PLNLPModel

if TYPE_CHECKING:
    from ogb.linkproppred import Evaluator

# Own graphs take OGB's Hits@K from the Evaluator of a Hits dataset, its K set per cut-off.
HITS_EVALUATOR = "ogbl-ddi"


@torch.no_grad()
def score_pairs(model: PLNLPModel, h: Tensor, pairs: Tensor, batch_size: int,
                adj: Tensor | None = None, repeated: bool = False) -> Tensor:
    """Scores ``pairs`` in chunks of ``batch_size`` from node vectors ``h``
    encoded on ``adj`` (which the edge level reads); ``repeated``: the same
    pairs come back on the same graph (see :meth:`PLNLPModel.score`)."""
    return torch.cat([model.score(h, chunk, adj, repeated)
                      for chunk in pairs.split(batch_size)]).cpu()


def ogb_metrics(info: DatasetInfo, pos_score: Tensor, neg_score: Tensor) -> dict[str, float]:
    """``hits_20``, ``hits_50``, ``hits_100`` (Hits@K datasets) or ``mrr``,
    each computed by ``ogb.linkproppred.Evaluator``; for an own graph
    (``metric == "auc"``), :func:`auc` and ``hits_<K>`` for each of
    ``info.hits_k``; ``auc`` and ``mrr`` (:func:`shared_negatives_mrr`) too
    where ``info.extra_metrics`` names them (Planetoid's graphs). As OGB
    defines it, Hits@K is the fraction of positives scored above the K-th
    best negative, and 1 when there are fewer than K negatives."""
    if info.metric == "mrr":
        result = ogb_evaluator(info.ogb_name).eval({
            "y_pred_pos": pos_score,
            "y_pred_neg": neg_score.view(pos_score.size(0), -1),
        })
        return {"mrr": float(result["mrr_list"].mean())}
    own = info.metric == "auc"
    metrics = {"auc": auc(pos_score, neg_score)} if own or "auc" in info.extra_metrics else {}
    evaluator = ogb_evaluator(HITS_EVALUATOR if own or info.family != "ogb" else info.ogb_name)
    for k in info.hits_k:
        evaluator.K = k
        result = evaluator.eval({"y_pred_pos": pos_score, "y_pred_neg": neg_score})
        metrics[f"hits_{k}"] = float(result[f"hits@{k}"])
    if "mrr" in info.extra_metrics:
        metrics["mrr"] = shared_negatives_mrr(pos_score, neg_score)
    return metrics


@functools.cache
def ogb_evaluator(name: str) -> "Evaluator":
    """OGB's ``Evaluator`` of dataset ``name``, made once a process: making
    one parses OGB's table of datasets with pandas (2 ms, twice an
    evaluation)."""
    from ogb.linkproppred import Evaluator  # sklearn with it: imported where metrics are made

    return Evaluator(name)


def shared_negatives_mrr(pos_score: Tensor, neg_score: Tensor) -> float:
    r"""The mean reciprocal rank of each positive among all the negatives
    (HeaRT's "existing setting"), a tie ranking the positive below,

    .. math::
        \mathrm{MRR} = \frac{1}{|P|} \sum_{p \in P}
        \frac{1}{1 + |\{n \in N : s_n \ge s_p\}|}."""
    ordered = neg_score.reshape(-1).double().sort().values
    above = ordered.numel() - torch.searchsorted(ordered, pos_score.reshape(-1).double())
    return float((1.0 / (1.0 + above.double())).mean())


def split_metrics(scorer: Callable[[Tensor], Tensor], info: DatasetInfo,
                  splits: dict[str, tuple[Tensor, Tensor]]) -> dict[str, float]:
    """OGB's metrics (:func:`ogb_metrics`) of ``scorer`` (pairs ``[M, 2]`` to
    scores ``[M]``) on every split in ``splits`` (name to positive and
    negative pairs), keyed ``<split>_<metric>``, e.g. ``valid_hits_20``."""
    return {f"{name}_{key}": value for name, (pos, neg) in splits.items()
            for key, value in ogb_metrics(info, scorer(pos), scorer(neg)).items()}


def scorer_metrics(scorer: Callable[[Tensor], Tensor], split: LinkSplit) -> dict[str, float]:
    """:func:`split_metrics` of ``scorer`` on ``split``'s validation and test
    positives and negatives (``valid_hits_20``, ``test_auc``, ...)."""
    parts = {part: (getattr(split, f"{part}_pos"), getattr(split, f"{part}_neg"))
             for part in ("valid", "test")}
    return split_metrics(scorer, split.info, parts)


def auc(pos_score: Tensor, neg_score: Tensor) -> float:
    r"""The area under the ROC curve: the fraction of (positive, negative)
    pairs ranked correctly, ties counting half,

    .. math::
        \mathrm{AUC} = \frac{1}{|P| |N|} \sum_{p \in P} \sum_{n \in N}
        \left( [s_p > s_n] + \tfrac{1}{2} [s_p = s_n] \right)
        = \frac{\sum_{p \in P} r_p - |P| (|P| + 1) / 2}{|P| |N|},

    where :math:`r_p` is the rank of :math:`s_p` among all scores (ties
    share their mean rank): one sort in torch, :math:`O(n \log n)`."""
    scores = torch.cat([pos_score.reshape(-1), neg_score.reshape(-1)]).detach().double().cpu()
    _, tie_group, ties = torch.unique(scores, return_inverse=True, return_counts=True)
    mean_rank = ties.cumsum(0).double() - (ties.double() - 1) / 2
    num_pos, num_neg = pos_score.numel(), neg_score.numel()
    rank_sum = float(mean_rank.index_select(0, tie_group[:num_pos]).sum())
    return (rank_sum - num_pos * (num_pos + 1) / 2) / (num_pos * num_neg)


@torch.no_grad()
def evaluate(
    model: PLNLPModel, info: DatasetInfo, x: Tensor | None, adj: Tensor,
    splits: dict[str, tuple[Tensor, Tensor]], batch_size: int,
) -> dict[str, float]:
    """:func:`split_metrics` of ``model``, its nodes encoded once over ``adj``.
    The pairs are scored as repeated ones: at the edge level, what their
    pair terms need but the node vectors is made at the first call and kept
    while the model keeps ``adj`` (fit evaluates the same splits on the
    same graph every epoch)."""
    model.eval()
    h = model.encode(x, adj)
    return split_metrics(lambda pairs: score_pairs(model, h, pairs.to(h.device), batch_size, adj,
                                                   repeated=True), info, splits)
