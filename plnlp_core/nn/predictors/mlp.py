import torch
from torch import Tensor, nn

from plnlp_core.nn.predictors.registry import PREDICTORS
from plnlp_core.nn.relu_dropout import relu_dropout


class MLP(nn.Module):
    r"""Linear layers with ReLU and dropout between them (fused by
    :func:`relu_dropout`) and none after the last:
    :math:`\mathbf{W}_L \cdots \mathrm{drop}(\mathrm{ReLU}(\mathbf{W}_1 \mathbf{x}))`.
    With ``residual`` every hidden layer adds the input before its ReLU,

    .. math::
        \mathbf{x}_l = \mathrm{drop}\left(\mathrm{ReLU}\left(
        \mathbf{W}_l \mathbf{x}_{l-1} + \mathbf{x}_0\right)\right),

    which keeps a deep MLP close to the input it scores (Refined-GAE's
    ``--mlp_res``, 8 layers on ogbl-ddi).

    Args:
        in_channels (int): Input size.
        hidden_channels (int): Size of the hidden layers.
        out_channels (int): Output size.
        num_layers (int): Number of linear layers.
        dropout (float): Dropout after each hidden layer. (default: ``0.0``)
        residual (bool): Add the input to every hidden layer; needs
            ``hidden_channels == in_channels``. (default: ``False``)
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int,
                 num_layers: int, dropout: float = 0.0, residual: bool = False) -> None:
        super().__init__()
        if residual and num_layers > 1 and hidden_channels != in_channels:
            raise ValueError(f"a residual MLP adds its input ({in_channels}) to hidden layers "
                             f"of {hidden_channels}")
        sizes = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:],
                                                                  strict=True))
        self.dropout = dropout
        self.residual = residual

    def reset_parameters(self) -> None:
        for lin in self.lins:
            lin.reset_parameters()

    def forward(self, x: Tensor) -> Tensor:
        x0 = x
        for lin in self.lins[:-1]:
            x = lin(x) + x0 if self.residual else lin(x)
            x = relu_dropout(x, self.dropout, self.training)
        return self.lins[-1](x)

    def __repr__(self) -> str:
        sizes = [self.lins[0].in_features] + [lin.out_features for lin in self.lins]
        residual = ", residual=True" if self.residual else ""
        return f"MLP({sizes}, dropout={self.dropout}{residual})"


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
        residual (bool): Add the MLP's input to each hidden layer
            (:class:`MLP`). (default: ``False``)

    Shapes:
        - **input:** :math:`(M, C)`, :math:`(M, C)`
        - **output:** :math:`(M)`
    """

    symmetric = True

    def __init__(
        self, in_channels: int, hidden_channels: int, num_layers: int, dropout: float = 0.0,
        residual: bool = False,
    ) -> None:
        super().__init__()
        self.mlp = MLP(self.input_size(in_channels), hidden_channels, 1, num_layers, dropout,
                       residual)
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
