"""Link-prediction metrics through OGB's own :class:`Evaluator`."""
import torch
from ogb.linkproppred import Evaluator
from torch import Tensor

from plnlp_core.datasets import DatasetInfo
from plnlp_core.nn import PLNLPModel


@torch.no_grad()
def score_pairs(model: PLNLPModel, h: Tensor, pairs: Tensor, batch_size: int) -> Tensor:
    """Scores ``pairs`` in chunks of ``batch_size`` from node vectors ``h``."""
    return torch.cat([model.score(h, chunk) for chunk in pairs.split(batch_size)]).cpu()


def ogb_metrics(info: DatasetInfo, pos_score: Tensor, neg_score: Tensor) -> dict[str, float]:
    """``hits_20``, ``hits_50``, ``hits_100`` (Hits@K datasets) or ``mrr``,
    each computed by ``ogb.linkproppred.Evaluator``."""
    evaluator = Evaluator(info.ogb_name)
    if info.metric == "mrr":
        result = evaluator.eval({
            "y_pred_pos": pos_score,
            "y_pred_neg": neg_score.view(pos_score.size(0), -1),
        })
        return {"mrr": float(result["mrr_list"].mean())}
    metrics = {}
    for k in (20, 50, 100):
        evaluator.K = k
        result = evaluator.eval({"y_pred_pos": pos_score, "y_pred_neg": neg_score})
        metrics[f"hits_{k}"] = float(result[f"hits@{k}"])
    return metrics


@torch.no_grad()
def evaluate(
    model: PLNLPModel, info: DatasetInfo, x: Tensor | None, adj: Tensor,
    splits: dict[str, tuple[Tensor, Tensor]], batch_size: int,
) -> dict[str, float]:
    """Metrics of every split in ``splits`` (name to positive and negative
    pairs), keyed ``<split>_<metric>``, e.g. ``valid_hits_20``."""
    model.eval()
    h = model.encode(x, adj)
    metrics = {}
    for name, (pos, neg) in splits.items():
        pos_score = score_pairs(model, h, pos.to(h.device), batch_size)
        neg_score = score_pairs(model, h, neg.to(h.device), batch_size)
        for key, value in ogb_metrics(info, pos_score, neg_score).items():
            metrics[f"{name}_{key}"] = value
    return metrics
