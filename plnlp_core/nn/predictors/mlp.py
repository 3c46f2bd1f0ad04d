import torch
from torch import Tensor, nn
from torch_geometric.nn import MLP

from plnlp_core.nn.predictors import PREDICTORS


@PREDICTORS.register("mlp")
class MLPPredictor(nn.Module):
    r"""The MLP predictor on the Hadamard product (paper §4.2, undirected),

    .. math::
        s_{ij} = \mathrm{MLP}\left(\mathbf{h}_i \odot \mathbf{h}_j\right).

    Args:
        in_channels (int): Size of the node vectors.
        hidden_channels (int): Size of the hidden layers.
        num_layers (int): Number of linear layers, the output layer included.
        dropout (float): Dropout between layers. (default: ``0.0``)

    Shapes:
        - **input:** :math:`(M, C)`, :math:`(M, C)`
        - **output:** :math:`(M)`
    """

    symmetric = True

    def __init__(
        self, in_channels: int, hidden_channels: int, num_layers: int, dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.mlp = MLP(
            in_channels=self.input_size(in_channels), hidden_channels=hidden_channels,
            out_channels=1, num_layers=num_layers, dropout=dropout, norm=None,
        )
        self.reset_parameters()

    @staticmethod
    def input_size(in_channels: int) -> int:
        return in_channels

    def combine(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        return h_src * h_dst

    def reset_parameters(self) -> None:
        self.mlp.reset_parameters()

    def forward(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        return self.mlp(self.combine(h_src, h_dst)).squeeze(-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mlp})"


@PREDICTORS.register("mlp_concat")
class MLPConcatPredictor(MLPPredictor):
    r"""The MLP predictor on the concatenation (paper §4.2, directed),

    .. math::
        s_{ij} = \mathrm{MLP}\left(\mathbf{h}_i \,\|\, \mathbf{h}_j\right).

    Takes the same arguments as :class:`MLPPredictor`.
    """

    symmetric = False

    @staticmethod
    def input_size(in_channels: int) -> int:
        return 2 * in_channels

    def combine(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        return torch.cat([h_src, h_dst], dim=-1)
