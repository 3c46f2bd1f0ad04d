r"""Target-edge removal: each training step encodes on the input graph
without the step's positive edges,

.. math::
    \tilde{A} = A - \sum_{(i, j) \in P} (e_i e_j^\top + e_j e_i^\top),

so that no positive is scored from node vectors that read its own edge, as
no validation or test edge is (NCN's target-link removal, Refined-GAE's
``--maskinput``). The pairs of a step that are edges of the graph are
exactly its positives, as negatives never are. Evaluation encodes on
:math:`A`.
"""
from collections.abc import Callable

import torch
from torch import Tensor

from plnlp_core.choices import TARGET_REMOVAL_LIMIT
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup
from plnlp_core.nn.encoders.encoder import GNNEncoder
from plnlp_core.nn.model import PLNLPModel
from plnlp_core.nn.node_input import NodeInput
from plnlp_core.sampling.neighbors import SampledSubgraph


class TargetEdgeRemoval:
    """What a model needs to score a step's pairs on the graph without its
    positive edges: the input graph's :class:`AdjacencyLookup`, kept
    between steps, and the groups a step is scored in."""

    removal_limit: float = TARGET_REMOVAL_LIMIT
    """The largest fraction of the graph's edges one group's graph lacks."""

    _lookup: AdjacencyLookup | None = None

    def lookup(self, adj: Tensor) -> AdjacencyLookup:
        """The :class:`AdjacencyLookup` of the input graph ``adj``, kept while
        the same tensor comes back (every step and evaluation chunk)."""
        if self._lookup is None or self._lookup.adj is not adj:
            self._lookup = AdjacencyLookup(adj)
        return self._lookup

    def score_without_targets(
        self, lookup: AdjacencyLookup, pairs: Tensor,
        score_group: Callable[[AdjacencyLookup, Tensor], Tensor],
    ) -> Tensor:
        """Scores of ``pairs``, each group of :meth:`removal_groups` scored by
        ``score_group(reduced, group_pairs)`` on the graph of ``lookup``
        without the group's edges (``reduced``, its lookup), back in the
        order of ``pairs``."""
        groups = self.removal_groups(lookup, pairs)
        scores = [score_group(lookup.without(pairs[index]), pairs[index]) for index in groups]
        if len(groups) == 1:
            return scores[0]
        return torch.cat(scores)[torch.argsort(torch.cat(groups))]

    def removal_groups(self, lookup: AdjacencyLookup, pairs: Tensor) -> list[Tensor]:
        r"""Rows of ``pairs`` in groups whose positive edges are at most
        :attr:`removal_limit` of the graph's edges: one group of all rows
        unless a step ranks more (full-batch training on a small graph).
        Each group is encoded on its own graph, so that training never
        sees a graph much sparser than evaluation's, which lacks only the
        held-out edges; each pair is still scored once."""
        rows = torch.arange(pairs.size(0), device=pairs.device)
        is_edge = lookup.contains(pairs[:, 0], pairs[:, 1])
        num_edges = lookup.keys.numel() // 2
        count = -(-int(is_edge.sum()) // max(int(self.removal_limit * num_edges), 1))
        if count <= 1:
            return [rows]
        return [torch.cat(parts) for parts in zip(rows[is_edge].tensor_split(count),
                                                  rows[~is_edge].tensor_split(count),
                                                  strict=True)]


class NodeLevelWithoutTargets(TargetEdgeRemoval, PLNLPModel):
    r"""The node level (:class:`~plnlp_core.nn.model.PLNLPModel`) trained
    with target-edge removal (``node_target_edge_removal``): each training
    step's pairs scored from node vectors encoded on :math:`\tilde{A}`, a
    step whose positives are more than ``removal_limit`` of the graph's
    edges in groups (:data:`~plnlp_core.choices.TARGET_REMOVAL_LIMIT` unless given).
    Neighbour-sampled steps and evaluation encode as the node level does.
    Takes :class:`~plnlp_core.nn.model.PLNLPModel`'s arguments besides.

    Shapes:
        - **input:** node features :math:`(N, F)` or ``None``, adjacency
          :math:`(N, N)`, pairs :math:`(M, 2)`
        - **output:** scores :math:`(M)`
    """

    def __init__(self, node_input: NodeInput, encoder: GNNEncoder, *args: object,
                 removal_limit: float = TARGET_REMOVAL_LIMIT,
                 **kwargs: object) -> None:
        super().__init__(node_input, encoder, *args, **kwargs)
        self.removal_limit = removal_limit
        encoder.stop_caching()  # the graph changes at every step

    def forward(self, x: Tensor | None, adj: Tensor | SampledSubgraph, pairs: Tensor) -> Tensor:
        """Scores ``pairs``; in training on the full graph, each group of
        them on the graph without its positive edges."""
        if isinstance(adj, SampledSubgraph) or not self.training:
            return super().forward(x, adj, pairs)
        return self.score_without_targets(
            self.lookup(adj), pairs, lambda reduced, group: self.score(
                self.encode(x, reduced.adj), group))
