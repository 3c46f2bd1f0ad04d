r"""HeaRT's hard negatives (Li et al., 2023, "Evaluating Graph Neural Networks
for Link Prediction: Current Pitfalls and New Benchmarking", Sec. 4): each
positive :math:`(a, b)` is ranked against :math:`K` corruptions of itself,
:math:`K/2` pairs :math:`(a, n)` (the target replaced) and :math:`K/2` pairs
:math:`(n, b)` (the source replaced), where the :math:`n` of an anchor
:math:`u \in \{a, b\}` are the candidates that heuristics on the training graph
put closest to :math:`u`.

Each heuristic :math:`h` (resource allocation, personalized PageRank and, for
a graph with node features, their cosine similarity) ranks the candidates
:math:`C(u)` it scores above 0, tied candidates sharing the last of their
places, and the ranks are merged by their minimum,

.. math::
    r_h(u, v) = \bigl|\{w \in C(u) : s_h(u, w) \ge s_h(u, v)\}\bigr|, \qquad
    r(u, v) = \min_h r_h(u, v),

where a candidate that :math:`h` scores 0 ranks just after all those it scores
above 0. The :math:`K/2` candidates of lowest :math:`r(u, \cdot)` are the
negatives of :math:`u`; those no heuristic scores above 0 come last, and a
seeded random priority orders ties. :math:`C(u)` leaves out :math:`u` and every
node :math:`u` has a known edge with (training, the positives, and any edges
passed as ``exclude``), so no negative is a known edge (HeaRT's own script
filters only the training edges, and for the test split the validation edges
too). An anchor with fewer candidates than :math:`K/2` repeats them in order.

The heuristics, on the training graph :math:`A` with degrees :math:`d`, are
:math:`s_{\mathrm{RA}}(u, v) = \sum_w A_{uw} A_{wv} / d_w` and the personalized
PageRank from :math:`u`, truncated after :math:`T` steps of the walk
:math:`P = D^{-1} A` that restarts with probability :math:`\alpha`,

.. math::
    \boldsymbol{\pi}_u = \alpha \sum_{t=0}^{T} (1 - \alpha)^t \, \mathbf{e}_u P^t.

Anchors are scored in chunks of dense ``[C, N]`` rows, on a dense :math:`A`
where :math:`N^2` floats fit in :data:`DENSE_ENTRIES` (ogbl-ddi), else a
sparse one.
"""
import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.heuristics import DENSE_ENTRIES, adjacency

CHUNK_ENTRIES = 2**22
"""Anchor-by-node scores held at once by default (16 MB a matrix)."""


def hard_negatives(
    train_edges: Tensor, num_nodes: int, pos: Tensor, num_negatives: int = 500,
    x: Tensor | None = None, exclude: Tensor | None = None, seed: int = 0,
    alpha: float = 0.15, ppr_steps: int = 20, batch_size: int | None = None,
) -> Tensor:
    r"""The HeaRT negatives of each positive pair.

    Args:
        train_edges (Tensor): The training edges, ``[E, 2]``, taken as
            undirected.
        num_nodes (int): The number of nodes :math:`N`.
        pos (Tensor): The positives :math:`(a, b)`, ``[P, 2]``.
        num_negatives (int, optional): :math:`K`, even. (default: :obj:`500`)
        x (Tensor, optional): Node features ``[N, F]``; adds their cosine
            similarity to the heuristics. (default: :obj:`None`)
        exclude (Tensor, optional): More known edges ``[M, 2]`` that must
            never be negatives, e.g. the other splits' positives.
            (default: :obj:`None`)
        seed (int, optional): Seeds the order of ties. (default: :obj:`0`)
        alpha (float, optional): PageRank's restart probability.
            (default: :obj:`0.15`)
        ppr_steps (int, optional): :math:`T`. (default: :obj:`20`)
        batch_size (int, optional): Anchors scored at once (default:
            :data:`CHUNK_ENTRIES` :math:`/ N`).

    Returns:
        A LongTensor ``[P, K]`` of nodes, on the CPU: column :math:`j < K/2` replaces
        :math:`b` (the pair :math:`(a, n_j)`), column :math:`j \ge K/2`
        replaces :math:`a` (the pair :math:`(n_j, b)`); see
        :func:`hard_negative_pairs`. The same for the same seed.
    """
    if num_negatives < 2 or num_negatives % 2:
        raise ValueError(f"num_negatives must be even and at least 2, not {num_negatives}")
    anchors, inverse = pos.reshape(-1).cpu().unique(return_inverse=True)
    known = [e.cpu() for e in (train_edges, pos, exclude) if e is not None]
    graph = _Graph(adjacency(train_edges, num_nodes), adjacency(torch.cat(known), num_nodes), x)
    ties = _tie_order(num_nodes, seed)
    size = batch_size or max(1, CHUNK_ENTRIES // num_nodes)
    per_anchor = torch.cat([
        _anchor_negatives(graph, chunk, ties, num_negatives // 2, alpha, ppr_steps)
        for chunk in anchors.split(size)
    ])
    return per_anchor[inverse.view(-1, 2)].flatten(1)


def split_hard_negatives(split: LinkSplit, num_negatives: int = 500,
                         seed: int = 0) -> dict[str, Tensor]:
    """:func:`hard_negatives` of the ``valid`` and the ``test`` positives of
    ``split``, on its training graph (and node features), keyed by part. One
    call scores each endpoint once for both parts: with every known edge
    excluded, an endpoint's negatives are the same in either."""
    valid, test = split.valid_pos, split.test_pos
    negatives = hard_negatives(split.train_pos, split.num_nodes, torch.cat([valid, test]),
                               num_negatives, x=split.x, seed=seed)
    return dict(zip(("valid", "test"), negatives.split([len(valid), len(test)]), strict=True))


def hard_negative_pairs(pos: Tensor, negatives: Tensor) -> Tensor:
    """The pairs ``[P, K, 2]`` that :func:`hard_negatives`' ``negatives``
    (``[P, K]``) stand for: :math:`(a, n)` in the first half of each row,
    :math:`(n, b)` in the second."""
    half = negatives.size(1) // 2
    kept = torch.cat([pos[:, :1].expand(-1, half), pos[:, 1:].expand(-1, half)], dim=1)
    first = torch.arange(negatives.size(1)) < half
    return torch.stack([torch.where(first, kept, negatives), torch.where(first, negatives, kept)],
                       dim=2)


class _Graph:
    """The training graph as the heuristics read it, and the known edges."""

    def __init__(self, adj: sp.csr_array, known: sp.csr_array, x: Tensor | None) -> None:
        n = adj.shape[0]
        self.rows = adj
        self.known = known
        self.inv_degree = torch.from_numpy(1.0 / np.maximum(np.diff(adj.indptr), 1)).float()
        self.adj = (torch.from_numpy(adj.toarray()) if n * n <= DENSE_ENTRIES
                    else _torch_csr(adj))
        self.x = None if x is None else F.normalize(x.float().cpu(), dim=1)

    def propagate(self, h: Tensor) -> Tensor:
        """:math:`H A` for rows ``h`` (``[C, N]``); :math:`A` is symmetric."""
        return (self.adj @ h.T).T


def _torch_csr(adj: sp.csr_array) -> Tensor:
    return torch.sparse_csr_tensor(torch.from_numpy(adj.indptr).long(),
                                   torch.from_numpy(adj.indices).long(),
                                   torch.from_numpy(adj.data), adj.shape)


def _tie_order(num_nodes: int, seed: int) -> tuple[Tensor, Tensor]:
    """A random order of the nodes, and a random start in it for each anchor."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.randperm(num_nodes, generator=generator),
            torch.randint(num_nodes, (num_nodes,), generator=generator))


def _anchor_negatives(graph: _Graph, anchors: Tensor, ties: tuple[Tensor, Tensor], half: int,
                      alpha: float, steps: int) -> Tensor:
    """The ``half`` negatives of each of ``anchors``, ``[C, half]``."""
    n = graph.inv_degree.numel()
    rows = anchors.numpy()
    allowed = torch.from_numpy(graph.known[rows].toarray() == 0)
    allowed[torch.arange(len(rows)), anchors] = False
    scores = [_resource_allocation(graph, rows), _pagerank(graph, anchors, alpha, steps)]
    if graph.x is not None:
        scores.append(graph.x[anchors] @ graph.x.T)
    rank = torch.stack([_ranks(s, allowed) for s in scores]).amin(dim=0)
    evidence = torch.stack([s > 0 for s in scores]).any(dim=0)
    rank = torch.where(allowed, torch.where(evidence, rank, n + 1), n + 2)
    order, start = ties
    key = rank * n + (order[None, :] + start[anchors, None]) % n
    best = key.topk(min(half, n), dim=1, largest=False).indices
    count = allowed.sum(dim=1, keepdim=True)
    if (count == 0).any():
        lonely = anchors[count.view(-1) == 0][0]
        raise ValueError(f"node {int(lonely)} has a known edge with every other node: "
                         "it has no negatives")
    return best.gather(1, torch.arange(half) % count)


def _resource_allocation(graph: _Graph, rows: np.ndarray) -> Tensor:
    """:math:`s_{\\mathrm{RA}}(u, \\cdot)` for each anchor row, ``[C, N]``."""
    adj_rows = torch.from_numpy(graph.rows[rows].toarray())
    return graph.propagate(adj_rows * graph.inv_degree)


def _pagerank(graph: _Graph, anchors: Tensor, alpha: float, steps: int) -> Tensor:
    """:math:`\\boldsymbol{\\pi}_u` for each anchor, ``[C, N]``."""
    restart = torch.zeros(len(anchors), graph.inv_degree.numel())
    restart[torch.arange(len(anchors)), anchors] = alpha
    ppr = restart
    for _ in range(steps):
        ppr = restart + (1 - alpha) * graph.propagate(ppr * graph.inv_degree)
    return ppr


def _ranks(score: Tensor, allowed: Tensor) -> Tensor:
    """:math:`r_h` of each candidate, ``[C, N]``: how many candidates score
    at least as high, if it scores above 0, else one more than how many do."""
    score = torch.where(allowed, score, 0.0).clamp(min=0.0)
    below = torch.searchsorted(score.sort(dim=1).values, score)
    positive = score > 0
    return torch.where(positive, score.size(1) - below, positive.sum(dim=1, keepdim=True) + 1)
