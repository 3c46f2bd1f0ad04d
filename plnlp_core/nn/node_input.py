import torch
from torch import Tensor, nn

NODE_INPUTS = ("embedding", "features", "both")


class NodeInput(nn.Module):
    r"""The encoder's input (paper §4.1): a trainable embedding
    :math:`\mathbf{e}_i`, the node features :math:`\mathbf{x}_i`, or both
    concatenated,

    .. math::
        \mathbf{h}^{(0)}_i = \mathbf{e}_i \,\|\, \mathbf{x}_i.

    Args:
        kind (str): ``"embedding"``, ``"features"`` or ``"both"``.
        num_nodes (int): Number of nodes.
        embedding_dim (int): Size of the trainable embedding.
        feature_dim (int): Size of the node features (``0`` if none).

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``
        - **output:** :math:`(N, D)` with :math:`D` = :attr:`out_channels`
    """

    def __init__(self, kind: str, num_nodes: int, embedding_dim: int, feature_dim: int) -> None:
        super().__init__()
        self.kind = kind
        self.use_embedding = kind in ("embedding", "both")
        self.use_features = kind in ("features", "both")
        self.embedding = nn.Embedding(num_nodes, embedding_dim) if self.use_embedding else None
        self.out_channels = embedding_dim * self.use_embedding + feature_dim * self.use_features
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.embedding is not None:
            nn.init.xavier_uniform_(self.embedding.weight)

    def forward(self, x: Tensor | None) -> Tensor:
        parts = []
        if self.use_embedding:
            parts.append(self.embedding.weight)
        if self.use_features:
            parts.append(x)
        return torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]

    def __repr__(self) -> str:
        return f"NodeInput({self.kind}, out_channels={self.out_channels})"
