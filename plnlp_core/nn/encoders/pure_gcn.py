import torch
from torch import Tensor

from plnlp_core.nn.encoders.registry import ENCODERS
from plnlp_core.nn.encoders.weight_free import WeightFreeConv


@ENCODERS.register("pure_gcn")
class PureGCN(WeightFreeConv):
    r"""GCN's propagation without weights (NCN's ``puregcn`` layer, Wang et
    al. 2023): symmetric normalisation with self-loops,

    .. math::
        \mathbf{X}' = \tilde{\mathbf{D}}^{-1/2} (\mathbf{A} + \mathbf{I})
        \tilde{\mathbf{D}}^{-1/2} \mathbf{X}, \qquad
        \tilde{D}_{ii} = 1 + \sum_j A_{ij},

    over a sparse CSR adjacency, whose values weigh the edges (the product
    runs in fp32, under bfloat16 autocast too). NCN's citation2 encoder is
    three of them with :class:`GNNEncoder`'s ``residual``.

    Args:
        in_channels (int): Size of the input; must equal ``out_channels``.
        out_channels (int): Size of the output.

    Shapes:
        - **input:** :math:`(N, C)`, adjacency :math:`(N, N)`
        - **output:** :math:`(N, C)`
    """

    def propagate(self, x: Tensor, adj: Tensor) -> Tensor:
        ones = torch.ones(adj.size(1), 1, dtype=adj.dtype, device=x.device)
        norm = (1.0 + adj @ ones).rsqrt()
        x = norm * x
        return norm * (adj @ x + x)
