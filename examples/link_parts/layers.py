import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import spmm


class GINLayer(MessagePassing):
    r"""The graph isomorphism layer (Xu et al., "How Powerful are Graph
    Neural Networks?", ICLR 2019, Eq. 4.1), an encoder layer of one's own:

    .. math::
        \mathbf{x}'_i = \mathrm{MLP}\left((1 + \epsilon)\, \mathbf{x}_i
        + \sum_{j \in \mathcal{N}(i)} \mathbf{x}_j\right),

    with a two-layer MLP. plnlp builds one per encoder layer as
    ``GINLayer(in_channels, out_channels, **encoder_options)`` and puts its
    ReLU and dropout between them.

    Args:
        in_channels (int): Size of the input.
        out_channels (int): Size of the output.
        eps (float): The initial :math:`\epsilon`. (default: ``0.0``)
        train_eps (bool): Learn :math:`\epsilon`. (default: ``False``)

    Shapes:
        - **input:** :math:`(N, F)`, adjacency :math:`(N, N)` (sparse) or
          ``edge_index`` :math:`(2, E)`
        - **output:** :math:`(N, C)`
    """

    def __init__(self, in_channels: int, out_channels: int, eps: float = 0.0,
                 train_eps: bool = False) -> None:
        super().__init__(aggr="add")
        self.initial_eps = eps
        if train_eps:
            self.eps = nn.Parameter(torch.empty(1))
        else:
            self.register_buffer("eps", torch.empty(1))
        self.mlp = nn.Sequential(nn.Linear(in_channels, out_channels), nn.ReLU(),
                                 nn.Linear(out_channels, out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.eps.data.fill_(self.initial_eps)
        for layer in self.mlp:
            if isinstance(layer, nn.Linear):
                layer.reset_parameters()

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        return self.mlp((1 + self.eps) * x + self.propagate(adj, x=x))

    def message(self, x_j: Tensor) -> Tensor:
        return x_j

    def message_and_aggregate(self, adj_t: Tensor, x: Tensor) -> Tensor:
        return spmm(adj_t, x, reduce="sum")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.mlp[0].in_features}, "
                f"{self.mlp[-1].out_features}, eps={self.initial_eps})")
