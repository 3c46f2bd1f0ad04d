import torch
from torch import Tensor, nn

NODE_INPUTS = ("embedding", "features", "both")
EMBEDDING_INITS = ("xavier", "orthogonal")


class NodeInput(nn.Module):
    r"""The encoder's input (paper §4.1): a trainable embedding
    :math:`\mathbf{e}_i`, the node features :math:`\mathbf{x}_i`, or both
    concatenated,

    .. math::
        \mathbf{h}^{(0)}_i = \mathrm{drop}_p\big(\mathbf{e}_i \,\|\, \mathbf{x}_i\big),

    with dropout :math:`p` in training (NCN's dropout after its embedding).
    :math:`\mathbf{E}` starts Xavier-uniform, or orthogonal (NCN's: with
    :math:`D \le N` its columns are orthonormal,
    :math:`\mathbf{E}^\top \mathbf{E} = \mathbf{I}`).

    Args:
        kind (str): ``"embedding"``, ``"features"`` or ``"both"``.
        num_nodes (int): Number of nodes.
        embedding_dim (int): Size of the trainable embedding.
        feature_dim (int): Size of the node features (``0`` if none).
        init (str): ``"xavier"`` or ``"orthogonal"``. (default: ``"xavier"``)
        dropout (float): Dropout :math:`p`. (default: ``0.0``)

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``
        - **output:** :math:`(N, D)` with :math:`D` = :attr:`out_channels`
    """

    def __init__(self, kind: str, num_nodes: int, embedding_dim: int, feature_dim: int,
                 init: str = "xavier", dropout: float = 0.0) -> None:
        super().__init__()
        self.kind = kind
        self.init = init
        self.dropout = dropout
        self.use_embedding = kind in ("embedding", "both")
        self.use_features = kind in ("features", "both")
        self.embedding = nn.Embedding(num_nodes, embedding_dim) if self.use_embedding else None
        self.out_channels = embedding_dim * self.use_embedding + feature_dim * self.use_features
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.embedding is not None:
            if self.init == "orthogonal":
                nn.init.orthogonal_(self.embedding.weight)
            else:
                nn.init.xavier_uniform_(self.embedding.weight)

    def forward(self, x: Tensor | None) -> Tensor:
        parts = []
        if self.use_embedding:
            parts.append(self.embedding.weight)
        if self.use_features:
            parts.append(x)
        h = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        return nn.functional.dropout(h, self.dropout, self.training)

    def __repr__(self) -> str:
        return (f"NodeInput({self.kind}, out_channels={self.out_channels}, init={self.init}, "
                f"dropout={self.dropout})")
