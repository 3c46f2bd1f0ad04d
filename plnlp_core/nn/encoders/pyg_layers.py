"""PyG's message-passing layers as PLNLP's encoders take them."""
import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.typing import Adj, OptTensor

from plnlp_core.nn.encoders.gcn_normalisation import normalised_csr
from plnlp_core.nn.encoders.registry import ENCODERS


@ENCODERS.register("gcn")
class CachedGCNConv(GCNConv):
    """PyG's :class:`~torch_geometric.nn.GCNConv` (symmetric normalisation
    with self-loops) normalising the adjacency once: it never changes within
    a model's life (an encoder that drops edges, or the edge level, turns
    ``cached`` off). Uncached, a sparse CSR graph without self-loops is
    normalised by :func:`~plnlp_core.nn.encoders.gcn_normalisation.normalised_csr`,
    the same entries in a third of PyG's time."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs) -> None:
        super().__init__(in_channels, out_channels, cached=True, **kwargs)

    def forward(self, x: Tensor, edge_index: Adj, edge_weight: OptTensor = None) -> Tensor:
        adj = normalised_csr(edge_index, 2.0 if self.improved else 1.0) \
            if self._normalises_each_pass(x, edge_index, edge_weight) else None
        if adj is None:  # cached, or weighted, or not a CSR, or with self-loops: PyG's own
            return super().forward(x, edge_index, edge_weight)
        out = self.propagate(adj, x=self.lin(x), edge_weight=None)
        return out if self.bias is None else out + self.bias

    def _normalises_each_pass(self, x: Tensor, edge_index: Adj, edge_weight: OptTensor) -> bool:
        """An uncached pass over a sparse CSR graph without weights, which
        :func:`normalised_csr` takes unless it has self-loops."""
        return (self.normalize and self.add_self_loops and not self.cached
                and isinstance(x, Tensor) and edge_weight is None
                and isinstance(edge_index, Tensor) and edge_index.layout == torch.sparse_csr)


@ENCODERS.register("gat")
class GATLayer(GATConv):
    """PyG's :class:`~torch_geometric.nn.GATConv` as it is (one head)."""
