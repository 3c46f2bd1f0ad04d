from torch import Tensor

from plnlp_core.nn.encoders.registry import ENCODERS
from plnlp_core.nn.encoders.weight_free import WeightFreeConv


@ENCODERS.register("sum")
class SumAggregation(WeightFreeConv):
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

    def propagate(self, x: Tensor, adj: Tensor) -> Tensor:
        return adj @ x
