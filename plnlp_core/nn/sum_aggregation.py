import torch
from torch import Tensor, nn


class SumAggregation(nn.Module):
    r"""Message passing without weights, summing the neighbours (NCN's
    ``puresum`` layer, Wang et al. 2023),

    .. math::
        \mathbf{x}'_i = \sum_{j \in \mathcal{N}(i)} A_{ij}\, \mathbf{x}_j,

    over a sparse CSR adjacency (the product runs in fp32, under bfloat16
    autocast too). With :class:`GNNEncoder`'s ``residual`` it is
    :math:`\mathbf{x} + \mathbf{A}\mathbf{x}`, NCN's ddi encoder.

    Args:
        in_channels (int): Size of the input; must equal ``out_channels``.
        out_channels (int): Size of the output.

    Shapes:
        - **input:** :math:`(N, C)`, adjacency :math:`(N, N)`
        - **output:** :math:`(N, C)`
    """

    has_weights = False

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        if in_channels != out_channels:
            raise ValueError(f"SumAggregation has no weights: in_channels ({in_channels}) must "
                             f"equal out_channels ({out_channels})")
        self.channels = out_channels

    def reset_parameters(self) -> None:
        """Nothing to reset: no weights."""

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        with torch.autocast(x.device.type, enabled=False):
            return adj @ x.to(adj.dtype)

    def __repr__(self) -> str:
        return f"SumAggregation({self.channels})"
