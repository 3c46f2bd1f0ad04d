r"""Neighbour sampling for node-level training on graphs past one worker's
memory (GraphSAGE's sampling, Hamilton et al. 2017): a step encodes the
:math:`L`-hop neighbourhood of its pairs' nodes, at most :math:`f_l`
neighbours of each node at hop :math:`l`, instead of every node,

.. math::
    \mathcal{N}_l(v) \subseteq \mathcal{N}(v), \qquad
    |\mathcal{N}_l(v)| = \min\left(f_l, |\mathcal{N}(v)|\right)
    \text{ at most},

drawn uniformly. A node with at most :math:`f_l` neighbours keeps them
all, so that with every fanout at least the largest degree the seeds'
vectors are full batch's. PyG's own sampler needs ``pyg-lib`` or
``torch-sparse``, which have no wheels for the torch this project installs;
this one samples in torch from the CSR's offsets: ``f_l`` uniform draws
per node (with replacement, the repeats dropped, so at most :math:`f_l`).
"""
from typing import NamedTuple

import torch
from torch import Tensor


class SampledSubgraph(NamedTuple):
    """A step's sampled neighbourhood.

    Attributes:
        nodes (Tensor): The global ids of its nodes, shape ``[n]``; the
            seeds first, in their order.
        edge_index (Tensor): Its edges in local ids, shape ``[2, E]``: row 0
            the sampled neighbour (message source), row 1 the node it was
            sampled for (target).
        hop_nodes (tuple[int, ...]): How many of ``nodes`` lie within each
            hop: ``hop_nodes[k]`` are the seeds and the nodes first reached
            at hops ``1..k``, in that order.
        hop_edges (tuple[int, ...]): How many of the edges were drawn at
            hops ``1..k`` (``hop_edges[0]`` is 0): those whose targets lie
            within hop ``k - 1``, first in ``edge_index``.
    """

    nodes: Tensor
    edge_index: Tensor
    hop_nodes: tuple[int, ...]
    hop_edges: tuple[int, ...]

    @property
    def num_seeds(self) -> int:
        return self.hop_nodes[0]


class NeighborSampler:
    """Samples the ``fanouts``-limited neighbourhoods of seed nodes in the
    graph of a sparse CSR adjacency (symmetric: undirected).

    Args:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``.
        fanouts (list[int]): Neighbours drawn per node at each hop, the
            seeds' hop first (one per encoder layer).
    """

    def __init__(self, adj: Tensor, fanouts: list[int]) -> None:
        self.crow = adj.crow_indices()
        self.col = adj.col_indices()
        self.fanouts = list(fanouts)
        self._local = torch.full((adj.size(0),), -1, dtype=torch.long, device=self.col.device)
        self._reached = torch.zeros(adj.size(0), dtype=torch.bool, device=self.col.device)

    @property
    def num_nodes(self) -> int:
        return self._local.numel()

    def sample(self, seeds: Tensor, generator: torch.Generator | None = None) -> SampledSubgraph:
        """The neighbourhood of ``seeds`` (distinct global ids)."""
        nodes, frontier = [seeds], seeds
        self._local[seeds] = torch.arange(seeds.numel(), device=seeds.device)
        hop_nodes, hop_edges = [seeds.numel()], [0]
        sources, targets = [], []
        for fanout in self.fanouts:
            target, neighbor = self._draw(frontier, fanout, generator)
            new = self._first_reached(neighbor)
            count = hop_nodes[-1]
            self._local[new] = torch.arange(count, count + new.numel(), device=seeds.device)
            hop_nodes.append(count + new.numel())
            hop_edges.append(hop_edges[-1] + target.numel())
            nodes.append(new)
            sources.append(self._local[neighbor])
            targets.append(self._local[target])
            frontier = new
        all_nodes = torch.cat(nodes)
        edge_index = torch.stack([torch.cat(sources), torch.cat(targets)])
        self._local[all_nodes] = -1
        return SampledSubgraph(all_nodes, edge_index, tuple(hop_nodes), tuple(hop_edges))

    def _first_reached(self, neighbor: Tensor) -> Tensor:
        """The distinct nodes of ``neighbor`` not yet in the subgraph, in
        increasing order: marked, then found by one scan of a node mask
        (cheaper than sorting the draws)."""
        self._reached[neighbor[self._local[neighbor] < 0]] = True
        new = self._reached.nonzero().squeeze(1)
        self._reached[new] = False
        return new

    def _draw(self, frontier: Tensor, fanout: int,
              generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
        """``(target, neighbor)`` pairs: every neighbour of a frontier node
        with at most ``fanout``, else ``fanout`` uniform draws, repeats dropped."""
        start = self.crow[frontier]
        degree = self.crow[frontier + 1] - start
        small = degree <= fanout
        # nodes of small degree: every neighbour
        whole = frontier[small]
        counts = degree[small]
        rows = torch.repeat_interleave(torch.arange(whole.numel(), device=frontier.device), counts)
        offsets = torch.arange(rows.numel(), device=frontier.device) - \
            (counts.cumsum(0) - counts)[rows]
        all_target, all_neighbor = whole[rows], self.col[start[small][rows] + offsets]
        # the others: fanout draws each, then distinct (target, neighbor) pairs
        many = frontier[~small]
        draws = torch.rand(many.numel(), fanout, generator=generator, device=frontier.device)
        picks = start[~small].unsqueeze(1) + (draws * degree[~small].unsqueeze(1)).long()
        # repeats dropped row by row: each row sorted (fanout entries), then compared
        picks = picks.sort(dim=1).values
        distinct = torch.ones_like(picks, dtype=torch.bool)
        distinct[:, 1:] = picks[:, 1:] != picks[:, :-1]
        target = many.unsqueeze(1).expand_as(picks)[distinct]
        return torch.cat([all_target, target]), torch.cat([all_neighbor, self.col[picks[distinct]]])


def sample_pairs(
    sampler: NeighborSampler, pairs: Tensor, generator: torch.Generator | None = None,
) -> tuple[SampledSubgraph, Tensor]:
    """The neighbourhood of every node in ``pairs`` (shape ``[M, 2]``) and
    the pairs in the subgraph's local ids (its seeds)."""
    seeds, local = pairs.reshape(-1).unique(return_inverse=True)
    return sampler.sample(seeds, generator), local.view_as(pairs)
