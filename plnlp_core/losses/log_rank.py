import torch.nn.functional as F
from torch import Tensor

from plnlp_core.losses.registry import LOSSES


@LOSSES.register("log_rank")
def log_rank_loss(pos: Tensor, neg: Tensor, weight: Tensor | None = None) -> Tensor:
    r"""The logistic pairwise ranking loss of the authors' code:

    .. math::
        \mathcal{L} = \sum_{(i,j) \in E^+} \sum_{(i,k) \in E^-}
        -\log \sigma\left(s_{ij} - s_{ik}\right)

    Args:
        pos (Tensor): Positive scores, shape ``[m]``.
        neg (Tensor): Negative scores, shape ``[m, num_neg]``.
        weight (Tensor, optional): Ignored.
    """
    return F.softplus(neg - pos.unsqueeze(-1)).sum()
