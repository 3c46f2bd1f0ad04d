from torch import Tensor, nn

from plnlp_core.nn.predictors.registry import PREDICTORS


@PREDICTORS.register("bilinear")
class BilinearPredictor(nn.Module):
    r"""The bilinear predictor (paper §4.2, directed),

    .. math::
        s_{ij} = \mathbf{h}_i^\top \mathbf{W} \mathbf{h}_j,

    with a learned, unconstrained :math:`\mathbf{W}`.

    Args:
        in_channels (int): Size of the node vectors.
        **kwargs: Settings other predictors take; ignored.

    Shapes:
        - **input:** :math:`(M, C)`, :math:`(M, C)`
        - **output:** :math:`(M)`
    """

    symmetric = False

    def __init__(self, in_channels: int, **kwargs: object) -> None:
        super().__init__()
        self.lin = nn.Linear(in_channels, in_channels, bias=False)  # W
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()

    def forward(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        # h_i^T W h_j as h_i . (W h_j): one matrix product, which autocast can run in bf16
        return (h_src * self.lin(h_dst)).sum(dim=-1)

    def score_all(self, h_src: Tensor, h: Tensor) -> Tensor:
        r"""Scores of each of ``h_src`` (shape ``[B, C]``) with every node of
        ``h`` (``[N, C]``) as one product, :math:`S = H_{src} (H W^\top)^\top`, ``[B, N]``."""
        return h_src @ self.lin(h).t()

    def __repr__(self) -> str:
        return f"BilinearPredictor({self.lin.in_features})"
