"""The message-passing graph and the training positives an experiment uses."""
import warnings
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.utils import degree, to_torch_csr_tensor, to_undirected

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")


@dataclass
class TrainingGraph:
    """What training needs of the graph.

    Attributes:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``, undirected, for
            message passing.
        degree (Tensor): Node degrees in ``adj``, shape ``[N]``.
        positives (Tensor): Positive pairs to rank, shape ``[M, 2]``.
        weights (Tensor, optional): Per-positive weights (margins), shape ``[M]``.
    """

    adj: Tensor
    degree: Tensor
    positives: Tensor
    weights: Tensor | None

    def to(self, device: torch.device | str) -> "TrainingGraph":
        """A copy with every tensor on ``device``."""
        weights = None if self.weights is None else self.weights.to(device)
        return TrainingGraph(self.adj.to(device), self.degree.to(device),
                             self.positives.to(device), weights)


def build_adjacency(edges: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """The undirected, coalesced adjacency of ``edges`` (shape ``[E, 2]``)
    as a sparse CSR tensor, and the node degrees."""
    edge_index = to_undirected(edges.t(), num_nodes=num_nodes)
    adj = to_torch_csr_tensor(edge_index, size=(num_nodes, num_nodes))
    return adj, degree(edge_index[0], num_nodes)


def select_training_edges(
    edges: Tensor, weights: Tensor | None, years: Tensor | None, min_year: int | None,
) -> tuple[Tensor, Tensor | None]:
    """Keeps the edges of year ``min_year`` or later (all when ``None``)."""
    if min_year is None or years is None:
        return edges, weights
    keep = years >= min_year
    return edges[keep], None if weights is None else weights[keep]


def append_pairs(
    edges: Tensor, weights: Tensor | None, pairs: Tensor, pair_weights: Tensor | None,
) -> tuple[Tensor, Tensor | None]:
    """Adds ``pairs`` to the positives; a side without weights counts 1 each."""
    if weights is None and pair_weights is None:
        return torch.cat([edges, pairs]), None
    weights = torch.ones(edges.size(0)) if weights is None else weights
    pair_weights = torch.ones(pairs.size(0)) if pair_weights is None else pair_weights
    return torch.cat([edges, pairs]), torch.cat([weights.float(), pair_weights.float()])
