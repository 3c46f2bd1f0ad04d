"""PyG's message-passing layers as PLNLP's encoders take them."""
from torch_geometric.nn import GATConv, GCNConv

from plnlp_core.nn.encoders.registry import ENCODERS


@ENCODERS.register("gcn")
class CachedGCNConv(GCNConv):
    """PyG's :class:`~torch_geometric.nn.GCNConv` (symmetric normalisation
    with self-loops) normalising the adjacency once: it never changes within
    a model's life (an encoder that drops edges turns ``cached`` off)."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs) -> None:
        super().__init__(in_channels, out_channels, cached=True, **kwargs)


@ENCODERS.register("gat")
class GATLayer(GATConv):
    """PyG's :class:`~torch_geometric.nn.GATConv` as it is (one head)."""
