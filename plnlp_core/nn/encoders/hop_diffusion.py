import torch
from torch import Tensor, nn

from plnlp_core.nn.encoders.mean_aggregation import symmetric_mean_spmm
from plnlp_core.nn.encoders.registry import ENCODERS


@ENCODERS.register("agdn")
class HopDiffusionConv(nn.Module):
    r"""Adaptive graph diffusion with hop-wise convolution weights (AGDN's
    ``HC`` layer, Sun et al., "Adaptive Graph Diffusion Networks"): the
    node vectors, mapped once, are diffused over :math:`K` hops of the mean
    transition matrix and the hops summed with learnable per-hop,
    per-channel weights, beside a residual linear map of the input,

    .. math::
        \mathbf{X}' = \sum_{k=0}^{K} \boldsymbol{\theta}_k \odot
        \left(\mathbf{D}^{-1} \mathbf{A}\right)^k \mathbf{X} \mathbf{W}
        + \mathbf{X} \mathbf{W}_r + \mathbf{b},

    so that one layer reads :math:`K` hops and learns how much each hop
    counts, channel by channel. :math:`\boldsymbol{\theta}_k` start at
    :math:`1 / (K + 1)` (the mean over hops); AGDN draws them at random.
    The transition matrix is SAGE's mean aggregation over a symmetric
    sparse CSR adjacency (:func:`symmetric_mean_spmm`, in fp32 under
    bfloat16 autocast too); AGDN also offers GAT's attention there.

    Args:
        in_channels (int): Size of the input.
        out_channels (int): Size of the output.
        hops (int): The number :math:`K` of diffusion hops. (default: ``3``)

    Shapes:
        - **input:** :math:`(N, F)`, sparse CSR adjacency :math:`(N, N)`
        - **output:** :math:`(N, C)`
    """

    def __init__(self, in_channels: int, out_channels: int, hops: int = 3) -> None:
        super().__init__()
        self.hops = hops
        self.lin = nn.Linear(in_channels, out_channels, bias=False)  # W
        self.lin_residual = nn.Linear(in_channels, out_channels)  # W_r and b
        self.hop_weights = nn.Parameter(torch.empty(hops + 1, out_channels))  # theta
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        self.lin_residual.reset_parameters()
        nn.init.constant_(self.hop_weights, 1.0 / (self.hops + 1))

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        z = self.lin(x)
        out = self.hop_weights[0] * z
        for k in range(1, self.hops + 1):
            z = symmetric_mean_spmm(adj, z)
            out = out + self.hop_weights[k] * z
        return out + self.lin_residual(x)

    def __repr__(self) -> str:
        return (f"HopDiffusionConv({self.lin.in_features}, {self.lin.out_features}, "
                f"hops={self.hops})")
