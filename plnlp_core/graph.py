"""The message-passing graph and the training positives an experiment uses."""
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")

WalkRounds = Sequence[tuple[Tensor, Tensor]]
"""Independent sets of random-walk pairs and their weights; epoch ``e``
trains on set ``(e - 1) mod R``."""


@dataclass
class TrainingGraph:
    """What training needs of the graph.

    Attributes:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``, undirected, for
            message passing.
        degree (Tensor): Node degrees in ``adj``, shape ``[N]``.
        positives (Tensor): Positive pairs ranked every epoch, shape ``[M, 2]``.
        weights (Tensor, optional): Per-positive weights (margins), shape ``[M]``.
        walks (WalkRounds, optional): Random-walk pairs added to the
            positives, one round per epoch in turn.
    """

    adj: Tensor
    degree: Tensor
    positives: Tensor
    weights: Tensor | None
    walks: WalkRounds | None = None

    def to(self, device: torch.device | str) -> "TrainingGraph":
        """A copy with every tensor on ``device`` (walk rounds move per epoch)."""
        weights = None if self.weights is None else self.weights.to(device)
        return TrainingGraph(self.adj.to(device), self.degree.to(device),
                             self.positives.to(device), weights, self.walks)

    def epoch_positives(self, epoch: int) -> tuple[Tensor, Tensor | None]:
        """The pairs and weights epoch ``epoch`` (from 1) ranks."""
        if not self.walks:
            return self.positives, self.weights
        pairs, weights = self.walks[(epoch - 1) % len(self.walks)]
        device = self.positives.device
        return append_pairs(self.positives, self.weights, pairs.to(device), weights.to(device))


def build_adjacency(edges: Tensor, num_nodes: int) -> tuple[Tensor, Tensor]:
    """The undirected, coalesced adjacency of ``edges`` (shape ``[E, 2]``)
    as a sparse CSR tensor, and the node degrees."""
    adj = csr_of_pairs(edges, num_nodes, both_ways=True)
    return adj, adj.crow_indices().diff().float()


def csr_of_pairs(pairs: Tensor, num_nodes: int, both_ways: bool) -> Tensor:
    """``pairs`` (shape ``[E, 2]``; with ``both_ways`` each reversed too)
    as an ``N x N`` sparse CSR tensor of ones, each pair once, rows and
    their columns in order: PyG's ``to_undirected`` and
    ``to_torch_csr_tensor``, built from one sorted array of ``row * N +
    col`` keys, so that about three copies of the pairs are held at the
    peak rather than PyG's several."""
    keys = pairs[:, 0] * num_nodes + pairs[:, 1]
    if both_ways:
        keys = torch.cat([keys, pairs[:, 1] * num_nodes + pairs[:, 0]])
    del pairs  # freed here when the caller passed a temporary
    keys = keys.unique()
    rows = keys.div(num_nodes, rounding_mode="floor")
    counts = torch.bincount(rows, minlength=num_nodes)
    del rows
    crow = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    return torch.sparse_csr_tensor(crow, keys.remainder_(num_nodes),
                                   torch.ones(keys.numel(), device=keys.device),
                                   (num_nodes, num_nodes), check_invariants=False)  # sorted, unique


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
    weights = _ones(edges) if weights is None else weights
    pair_weights = _ones(pairs) if pair_weights is None else pair_weights
    return torch.cat([edges, pairs]), torch.cat([weights.float(), pair_weights.float()])


def normalized_margins(edges: Tensor, weights: Tensor | None, num_nodes: int) -> Tensor:
    r"""Each edge's weight normalised by its endpoints' weighted degrees,

    .. math::
        \gamma_{ij} = \frac{w_{ij}}{\sqrt{d_i d_j}}, \qquad
        d_i = \sum_{(i, k) \in E} w_{ik},

    over the undirected graph of ``edges`` (``w = 1`` without weights):
    the margins of the Weighted-Hinge-AUC loss (paper Eq. 9)."""
    weights = _ones(edges) if weights is None else weights.float()
    strength = torch.zeros(num_nodes, device=edges.device)
    strength.index_add_(0, edges[:, 0], weights).index_add_(0, edges[:, 1], weights)
    return weights * (strength[edges[:, 0]] * strength[edges[:, 1]]).clamp(min=1e-12).rsqrt()


def _ones(pairs: Tensor) -> Tensor:
    return torch.ones(pairs.size(0), device=pairs.device)
