import torch.nn.functional as F
from torch import Tensor

from plnlp_core.losses.registry import LOSSES


@LOSSES.register("ce")
def cross_entropy_loss(pos: Tensor, neg: Tensor, weight: Tensor | None = None) -> Tensor:
    r"""Binary cross-entropy on the scores as logits, the paper's
    classification baseline (§5.4). Each positive's ``num_neg`` negatives
    together count as much as the positive:

    .. math::
        \mathcal{L} = \sum_{(i,j) \in E^+} \Big( -\log \sigma(s_{ij})
        - \frac{1}{K} \sum_{k=1}^{K} \log\left(1 - \sigma(s_{ik})\right) \Big)

    Args:
        pos (Tensor): Positive scores, shape ``[m]``.
        neg (Tensor): Negative scores, shape ``[m, num_neg]``.
        weight (Tensor, optional): Ignored.
    """
    return F.softplus(-pos).sum() + F.softplus(neg).mean(dim=-1).sum()
