from torch import Tensor

from plnlp_core.losses import RankingLoss


class MarginRankingLoss(RankingLoss):
    r"""The margin ranking (hinge) loss, a pairwise ranking loss of one's
    own beside the paper's AUC surrogates (§4.3):

    .. math::
        \mathcal{L} = \sum_{(i,j) \in E^+} \sum_{(i,k) \in E^-}
        \max\left(0, \gamma - s_{ij} + s_{ik}\right),

    the unsquared form of the hinge AUC loss (paper Eq. 8) with its margin
    :math:`\gamma` a setting (``loss_options.margin``).

    Args:
        margin (float): The margin :math:`\gamma`. (default: ``1.0``)

    Shapes:
        - **input:** :math:`(m)`, :math:`(m, K)`
        - **output:** :math:`()`
    """

    def __init__(self, margin: float = 1.0) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, pos: Tensor, neg: Tensor, weight: Tensor | None = None) -> Tensor:
        return (self.margin - pos.unsqueeze(-1) + neg).clamp(min=0).sum()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(margin={self.margin})"
