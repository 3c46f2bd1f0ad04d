import torch
from torch import Tensor

from plnlp_core.nn.predictors.mlp import MLPPredictor


class HadamardDistanceMLP(MLPPredictor):
    r"""The Hadamard MLP predictor with the pair's distance beside the
    product (paper §4.2's MLP predictor, a variant of one's own):

    .. math::
        s_{ij} = \mathrm{MLP}\left(\mathbf{h}_i \odot \mathbf{h}_j
        \,\|\, \left|\mathbf{h}_i - \mathbf{h}_j\right|\right),

    symmetric in :math:`i, j` like the product alone. It takes what
    :class:`~plnlp_core.nn.predictors.mlp.MLPPredictor` takes: plnlp passes
    ``in_channels``, ``hidden_channels``, ``num_layers`` and ``dropout``
    (``predictor_hidden``, ``predictor_layers``, ``predictor_dropout``);
    ``residual`` is its own setting (``predictor_options.residual``).

    Shapes:
        - **input:** :math:`(M, C)`, :math:`(M, C)`
        - **output:** :math:`(M)`
    """

    symmetric = True

    @staticmethod
    def input_size(in_channels: int) -> int:
        return 2 * in_channels

    def combine(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        return torch.cat([h_src * h_dst, (h_src - h_dst).abs()], dim=-1)
