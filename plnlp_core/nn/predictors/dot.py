from torch import Tensor, nn

from plnlp_core.nn.predictors.registry import PREDICTORS


@PREDICTORS.register("dot")
class DotPredictor(nn.Module):
    r"""The inner-product predictor (paper §4.2, undirected),

    .. math::
        s_{ij} = \mathbf{h}_i^\top \mathbf{h}_j.

    Args:
        in_channels (int): Size of the node vectors.
        **kwargs: Settings other predictors take; ignored.

    Shapes:
        - **input:** :math:`(M, C)`, :math:`(M, C)`
        - **output:** :math:`(M)`
    """

    symmetric = True

    def __init__(self, in_channels: int, **kwargs: object) -> None:
        super().__init__()
        self.in_channels = in_channels

    def reset_parameters(self) -> None:
        pass

    def forward(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        return (h_src * h_dst).sum(dim=-1)

    def score_all(self, h_src: Tensor, h: Tensor) -> Tensor:
        r"""Scores of each of ``h_src`` (shape ``[B, C]``) with every node of
        ``h`` (``[N, C]``) as one product, :math:`S = H_{src} H^\top`, ``[B, N]``."""
        return h_src @ h.t()

    def __repr__(self) -> str:
        return f"DotPredictor({self.in_channels})"
