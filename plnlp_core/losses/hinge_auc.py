from torch import Tensor

from plnlp_core.losses.registry import LOSSES


@LOSSES.register("hinge_auc")
def hinge_auc_loss(pos: Tensor, neg: Tensor, weight: Tensor | None = None) -> Tensor:
    r"""The squared hinge surrogate of AUC (paper Eq. 8):

    .. math::
        \mathcal{L} = \sum_{(i,j) \in E^+} \sum_{(i,k) \in E^-}
        \max\left(0, 1 - s_{ij} + s_{ik}\right)^2

    Args:
        pos (Tensor): Positive scores, shape ``[m]``.
        neg (Tensor): Negative scores, shape ``[m, num_neg]``.
        weight (Tensor, optional): Ignored; only
            :func:`weighted_hinge_auc_loss` uses weights.
    """
    return (1 - pos.unsqueeze(-1) + neg).clamp(min=0).square().sum()
