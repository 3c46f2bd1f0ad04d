from torch import Tensor

from plnlp_core.errors import PLNLPError
from plnlp_core.losses.registry import LOSSES


@LOSSES.register("weighted_hinge_auc")
def weighted_hinge_auc_loss(pos: Tensor, neg: Tensor, weight: Tensor | None) -> Tensor:
    r"""The weighted squared hinge surrogate of AUC (paper Eq. 9), where the
    margin :math:`\gamma_{ij}` of each positive pair is also its weight:

    .. math::
        \mathcal{L} = \sum_{(i,j) \in E^+} \sum_{(i,k) \in E^-}
        \gamma_{ij} \max\left(0, \gamma_{ij} - s_{ij} + s_{ik}\right)^2

    Args:
        pos (Tensor): Positive scores, shape ``[m]``.
        neg (Tensor): Negative scores, shape ``[m, num_neg]``.
        weight (Tensor): The margins :math:`\gamma`, shape ``[m]``.
    """
    if weight is None:
        raise PLNLPError(
            "loss 'weighted_hinge_auc' needs a weight per positive pair; "
            "turn on random-walk augmentation or use a dataset with edge weights."
        )
    gamma = weight.unsqueeze(-1)
    return (gamma * (gamma - pos.unsqueeze(-1) + neg).clamp(min=0).square()).sum()
