r"""HeaRT's hard negatives (Li et al., 2023, "Evaluating Graph Neural Networks
for Link Prediction: Current Pitfalls and New Benchmarking", Sec. 4), built by
the rules of the authors' generator (``heart_negatives/`` of
Juanhui28/HeaRT): each positive :math:`(a, b)` is ranked against :math:`K`
corruptions of itself, :math:`K/2` pairs :math:`(a, n)` (the target replaced)
and :math:`K/2` pairs :math:`(n, b)` (the source replaced).

For an anchor :math:`u \in \{a, b\}` every node :math:`v` gets a score from
each heuristic :math:`h`: HeaRT's "RA" table, a common-neighbour count scaled
by the candidate's degree (the columns of :math:`A \, \mathrm{diag}(1/d)`),

.. math::
    s_{\mathrm{RA}}(u, v) = \frac{1}{d_v} \sum_w A_{uw} A_{wv},

and the personalized PageRank of :math:`v` from :math:`u` by Andersen's push
(restart :math:`\alpha`, a node pushed while its residual is at least
:math:`\alpha \varepsilon d_v`), with the cosine similarity of node features
added on a graph of one's own that has them. The masked nodes (:math:`u`, the
other endpoint, and the links of the mask below) score :math:`-1`. Each
heuristic ranks the nodes it scores above 0 from 1, ties taking the best place
of their value counted from the largest distinct one,

.. math::
    r_h(u, v) = \bigl|\{w : s_h(u, v) \le s_h(u, w) < \max_{w'} s_h(u, w'),\,
    s_h(u, w) > 0\}\bigr| + 1,

a node scored 0 one place after the last and a masked node two; the ranks are
merged by their minimum, :math:`r(u, v) = \min_h r_h(u, v)`, and the
:math:`K/2` nodes of lowest :math:`r` are taken by ``torch.topk`` (whose order
among equal ranks HeaRT's files inherit). Where fewer than :math:`K/2` nodes
are scored above 0, the rest are drawn with replacement among those scored 0
by one ``numpy`` stream seeded 42, in HeaRT's order (validation before test,
each pair's source before its target).

Two masks (:data:`HARD_NEGATIVE_MODES`):

* ``heart``, HeaRT's protocol: a validation pair masks the training links, a
  test pair the training and validation links (ogbl-collab masks neither), so
  the *other* held-out positives stay eligible: a perfect predictor does not
  reach MRR 1 (see :func:`plnlp_core.scoring.heart.heart_ceiling`).
* ``heart_filtered``: every known link of every split is masked, so no
  negative is a true link; its figures are not HeaRT's.
"""
import functools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch import Tensor

from plnlp_core.choices import HEART_MODES
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.heuristics import adjacency

HARD_NEGATIVE_MODES = HEART_MODES
"""HeaRT's protocol, and the variant that masks every known link."""

CHUNK_ENTRIES = 2**23
"""Anchor-by-node scores held at once by default (32 MB a matrix)."""


@dataclass(frozen=True)
class HeartProtocol:
    """HeaRT's generator settings for one dataset (its
    ``scripts/HeaRT/generate_<dataset>.sh``): PageRank's :math:`\\varepsilon`
    and :math:`\\alpha`; ``mask_known``: the training (and for test the
    validation) links are masked; ``valid_in_test``: the test part's
    heuristics read the training and validation links; ``features``: the
    cosine similarity of node features is a third heuristic."""

    eps: float = 5e-5
    alpha: float = 0.15
    mask_known: bool = True
    valid_in_test: bool = False
    features: bool = True
    seed: int = 42


OGB_PROTOCOLS = {
    "ddi": HeartProtocol(eps=1e-5, features=False),
    "collab": HeartProtocol(eps=1e-5, mask_known=False, valid_in_test=True, features=False),
    "ppa": HeartProtocol(eps=5e-6, features=False),
    "citation2": HeartProtocol(eps=5e-5, features=False),
}
"""HeaRT's settings of the OGB datasets; a graph of one's own gets
:class:`HeartProtocol`'s defaults (HeaRT's, with features as on its
non-OGB datasets)."""


def heart_protocol(dataset: str) -> HeartProtocol:
    """The generator settings HeaRT used for ``dataset`` (an OGB short name),
    else its defaults."""
    return OGB_PROTOCOLS.get(dataset, HeartProtocol())


def hard_negatives(
    heuristic_edges: Tensor, num_nodes: int, pos: Tensor, masked_edges: Tensor | None,
    num_negatives: int = 500, *, x: Tensor | None = None, edge_weight: Tensor | None = None,
    eps: float = 5e-5, alpha: float = 0.15, rng: np.random.RandomState | None = None,
    batch_size: int | None = None,
) -> Tensor:
    r"""The HeaRT negatives of each positive pair.

    Args:
        heuristic_edges (Tensor): The links the heuristics read, ``[E, 2]``,
            taken as undirected.
        num_nodes (int): The number of nodes :math:`N`.
        pos (Tensor): The positives :math:`(a, b)`, ``[P, 2]``.
        masked_edges (Tensor, optional): The links that are never negatives
            ``[M, 2]``, besides the pair itself; :obj:`None` masks only it.
        num_negatives (int, optional): :math:`K`, even. (default: :obj:`500`)
        x (Tensor, optional): Node features ``[N, F]``; adds their cosine
            similarity to the heuristics. (default: :obj:`None`)
        edge_weight (Tensor, optional): ``[E]``; the degrees that scale
            :math:`s_{\mathrm{RA}}` sum them (ogbl-collab). (default: :obj:`None`)
        eps (float, optional): The push's :math:`\varepsilon`. (default: :obj:`5e-5`)
        alpha (float, optional): PageRank's restart probability.
            (default: :obj:`0.15`)
        rng (numpy.random.RandomState, optional): The stream short anchors
            draw from, shared across calls in HeaRT's order (default: seeded 42).
        batch_size (int, optional): Anchors (and pairs) ranked at once
            (default: :data:`CHUNK_ENTRIES` :math:`/ N`).

    Returns:
        A LongTensor ``[P, K]`` of nodes, on the CPU: column :math:`j < K/2` replaces
        :math:`b` (the pair :math:`(a, n_j)`), column :math:`j \ge K/2`
        replaces :math:`a` (the pair :math:`(n_j, b)`); see
        :func:`hard_negative_pairs`.
    """
    if num_negatives < 2 or num_negatives % 2:
        raise ValueError(f"num_negatives must be even and at least 2, not {num_negatives}")
    graph = _Graph(heuristic_edges, num_nodes, x, edge_weight, eps, alpha)
    masked = None if masked_edges is None else adjacency(masked_edges, num_nodes)
    rng = rng if rng is not None else np.random.RandomState(42)
    entries = CHUNK_ENTRIES if batch_size is None else batch_size * num_nodes
    return _negatives_of_part(graph, masked, pos.cpu(), num_negatives // 2, rng, entries)


def split_hard_negatives(split: LinkSplit, num_negatives: int = 500,
                         mode: str = "heart") -> dict[str, Tensor]:
    """:func:`hard_negatives` of the ``valid`` and the ``test`` positives of
    ``split``, keyed by part, under ``mode`` (one of
    :data:`HARD_NEGATIVE_MODES`) and HeaRT's settings of the dataset
    (:func:`heart_protocol`): one random stream for both parts, validation
    first, as HeaRT draws."""
    if mode not in HARD_NEGATIVE_MODES:
        raise ValueError(f"mode must be one of {', '.join(HARD_NEGATIVE_MODES)}, not {mode!r}")
    protocol = heart_protocol(split.info.name)
    rng = np.random.RandomState(protocol.seed)
    x = split.x if protocol.features else None
    train_valid = torch.cat([split.train_pos, split.valid_pos])
    train_graph = _Graph(split.train_pos, split.num_nodes, x, split.train_weight,
                         protocol.eps, protocol.alpha)
    test_graph = train_graph
    if protocol.valid_in_test:
        weight = (None if split.train_weight is None  # validation links weigh 1, as HeaRT adds them
                  else torch.cat([split.train_weight, torch.ones(len(split.valid_pos))]))
        test_graph = _Graph(train_valid, split.num_nodes, x, weight, protocol.eps, protocol.alpha)
    masks = {"valid": split.train_pos, "test": train_valid} if protocol.mask_known else {}
    if mode == "heart_filtered":
        every_link = torch.cat([train_valid, split.test_pos])
        masks = {"valid": every_link, "test": every_link}
    parts = {}
    for part, graph in (("valid", train_graph), ("test", test_graph)):
        masked = masks.get(part)
        masked = None if masked is None else adjacency(masked, split.num_nodes)
        parts[part] = _negatives_of_part(graph, masked, getattr(split, f"{part}_pos"),
                                         num_negatives // 2, rng)
    return parts


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
    """What the heuristics read: the links (CSR, sorted, as HeaRT's coalesced
    edges), the degree-scaled links of :math:`s_{\\mathrm{RA}}`, the
    features; and each anchor's PageRank once pushed."""

    def __init__(self, edges: Tensor, num_nodes: int, x: Tensor | None,
                 edge_weight: Tensor | None, eps: float, alpha: float) -> None:
        self.adj = adjacency(edges, num_nodes)
        self.adj.sort_indices()
        degree = _degrees(edges, num_nodes, edge_weight, self.adj)
        self.scaled = sp.csr_array(self.adj.multiply(np.float32(1) / degree[None, :]))
        self.x = None if x is None else F.normalize(_dense(x).float().cpu(), dim=1)
        self.push = _Push(self.adj, eps, alpha)
        self.num_nodes = num_nodes

    def scores(self, anchors: np.ndarray) -> list[Tensor]:
        """Each heuristic's float32 scores ``[C, N]`` of the anchors."""
        scores = [torch.from_numpy((self.adj[anchors] @ self.scaled).toarray()),
                  torch.from_numpy(self.push.rows(anchors))]
        if self.x is not None:
            scores.append(self.x[anchors] @ self.x.T)
        return scores


def _dense(x: Tensor) -> Tensor:
    """``x`` as a dense tensor: the feature heuristic scores every pair of a chunk."""
    return x.to_dense() if x.is_sparse else x


def _degrees(edges: Tensor, num_nodes: int, edge_weight: Tensor | None,
             adj: sp.csr_array) -> np.ndarray:
    """The float32 degrees :math:`d` that scale :math:`s_{\\mathrm{RA}}`:
    neighbour counts, or summed weights; 0 for an isolated node gives a
    scale of 0, as HeaRT's ``nan_to_num`` of :math:`1/0` does not (it gives the
    largest float), but an isolated node has no common neighbour anyway."""
    if edge_weight is None:
        degree = np.diff(adj.indptr).astype(np.float32)
    else:
        ends = edges.cpu().numpy().T.reshape(-1)
        weight = np.tile(edge_weight.cpu().numpy().astype(np.float32), 2)
        degree = np.bincount(ends, weights=weight, minlength=num_nodes).astype(np.float32)
    return np.where(degree > 0, degree, np.inf).astype(np.float32)


LIST_PUSH_DEGREE = 64
"""The mean degree below which :class:`_Push` walks Python lists."""


class _Push:
    r"""Andersen's push for the personalized PageRank of each anchor (HeaRT's
    ``calc_ppr``, PyG's ``GDC``): the residual starts at :math:`\alpha` on the
    anchor; the node last queued is pushed, its residual added to its score
    and :math:`(1-\alpha)/d_u` of it to each neighbour, which is queued when
    its residual reaches :math:`\alpha \varepsilon d_v` and it is not queued
    already. Float64 sums in HeaRT's order, kept as float32.

    Both ways of pushing give the same sums. On a graph of mean degree
    below :data:`LIST_PUSH_DEGREE` a push walks Python lists, one neighbour
    at a time, since a push there reaches a few neighbours and each numpy
    call would cost more than its arithmetic; on a denser one it updates
    all of a node's neighbours in one numpy call. Milliseconds an anchor,
    lists against numpy (``benchmarks/heart_push.py``, Intel Xeon, two
    runs): ddi's 60-node stand-in 30-32 against 101-106, a uniform graph of
    degree 9 9-15 against 26-32, a power-law one of degree 8 11-14 against
    26-28, of degree 40 6.2-6.5 against 11-12; of degree 100 0.9-1.3
    against 0.7-1.0, and the real ogbl-ddi (degree 500) 1.0 against 0.9."""

    def __init__(self, adj: sp.csr_array, eps: float, alpha: float) -> None:
        self.indptr, self.indices = adj.indptr, adj.indices
        self.degree = np.diff(adj.indptr)
        self.threshold = alpha * eps * self.degree
        self.alpha = alpha
        self.cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        sparse = adj.nnz < LIST_PUSH_DEGREE * len(self.degree)
        self.walk = self._push_lists if sparse else self._push_arrays

    def rows(self, anchors: np.ndarray) -> np.ndarray:
        """The anchors' PageRank rows, ``[C, N]`` float32."""
        out = np.zeros((len(anchors), len(self.degree)), dtype=np.float32)
        for row, anchor in enumerate(anchors.tolist()):
            nodes, values = self._anchor(anchor)
            out[row, nodes] = values
        return out

    def _anchor(self, anchor: int) -> tuple[np.ndarray, np.ndarray]:
        if anchor not in self.cache:
            self.cache[anchor] = self.walk(anchor)
        return self.cache[anchor]

    def _push_arrays(self, anchor: int) -> tuple[np.ndarray, np.ndarray]:
        n = len(self.degree)
        residual, score = np.zeros(n), {anchor: 0.0}
        queued = np.zeros(n, dtype=bool)
        residual[anchor], queue, queued[anchor] = self.alpha, [anchor], True
        while queue:
            node = queue.pop()
            queued[node] = False
            pushed = residual[node]
            score[node] = score.get(node, 0.0) + pushed
            residual[node] = 0.0
            neighbours = self.indices[self.indptr[node]:self.indptr[node + 1]]
            if not len(neighbours):
                continue
            residual[neighbours] += (1 - self.alpha) * pushed / self.degree[node]
            ready = neighbours[(residual[neighbours] >= self.threshold[neighbours])
                               & ~queued[neighbours]]
            queue.extend(ready.tolist())
            queued[ready] = True
        return _score_arrays(score)

    @functools.cached_property
    def _as_lists(self) -> tuple[list[int], list[float]]:
        """The row offsets and the thresholds, as Python lists."""
        return self.indptr.tolist(), self.threshold.tolist()

    def _push_lists(self, anchor: int) -> tuple[np.ndarray, np.ndarray]:
        indptr, threshold = self._as_lists
        residual, queued = [0.0] * len(threshold), [False] * len(threshold)
        score = {anchor: 0.0}
        residual[anchor], queue, queued[anchor] = self.alpha, [anchor], True
        while queue:
            node = queue.pop()
            queued[node] = False
            pushed = residual[node]
            score[node] = score.get(node, 0.0) + pushed
            residual[node] = 0.0
            start, end = indptr[node], indptr[node + 1]
            if start == end:
                continue
            share = (1 - self.alpha) * pushed / (end - start)
            for neighbour in self.indices[start:end].tolist():
                reached = residual[neighbour] = residual[neighbour] + share
                if reached >= threshold[neighbour] and not queued[neighbour]:
                    queue.append(neighbour)
                    queued[neighbour] = True
        return _score_arrays(score)


def _score_arrays(score: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    """The nodes a push scored and their float64 scores, in the order it reached them."""
    nodes = np.fromiter(score.keys(), dtype=np.int64, count=len(score))
    return nodes, np.fromiter(score.values(), dtype=np.float64, count=len(score))


def _negatives_of_part(graph: _Graph, masked: sp.csr_array | None, pos: Tensor, half: int,
                       rng: np.random.RandomState, batch_entries: int = CHUNK_ENTRIES) -> Tensor:
    """The ``2 * half`` negatives of each pair of ``pos``, ``[P, 2 * half]``,
    ``masked`` links left out. Each anchor's scores and ranks are computed
    once for all its pairs; a pair's other endpoint, masked too, shifts them
    (:class:`_AnchorRanks`)."""
    anchors = torch.stack([pos[:, 0], pos[:, 1]], dim=1).reshape(-1)  # HeaRT's order
    others = torch.stack([pos[:, 1], pos[:, 0]], dim=1).reshape(-1)
    best = torch.empty(len(anchors), half, dtype=torch.long)
    short: dict[int, tuple[Tensor, Tensor, int]] = {}
    unique, inverse = anchors.unique(return_inverse=True)
    rows_by_anchor = inverse.argsort(stable=True)
    first = torch.searchsorted(inverse[rows_by_anchor], torch.arange(len(unique) + 1))
    per_chunk = max(1, batch_entries // graph.num_nodes)
    for start in range(0, len(unique), per_chunk):
        ranks = _AnchorRanks(graph, unique[start:start + per_chunk].numpy(), masked)
        rows = rows_by_anchor[first[start]:first[min(start + per_chunk, len(unique))]]
        for batch in rows.split(per_chunk):
            _batch_negatives(ranks, inverse[batch] - start, others[batch], half, best, batch,
                             short)
    for row in sorted(short):  # HeaRT's draws, in its order
        merged, unscored, ranked = short[row]
        best[row] = _short_anchor(merged, unscored, ranked, half, rng, int(anchors[row]))
    return best.view(len(pos), 2 * half)


class _AnchorRanks:
    """Each heuristic's scores and HeaRT ranks of anchors ``[C, N]`` with the
    anchor and its masked links at -1, and what a further masked node (the
    pair's other endpoint) changes: the count of nodes scored above 0, of
    those at the largest score and at the next."""

    def __init__(self, graph: _Graph, anchors: np.ndarray, masked: sp.csr_array | None) -> None:
        rows = torch.arange(len(anchors))
        self.mask = torch.zeros(len(anchors), graph.num_nodes, dtype=torch.bool)
        if masked is not None:
            self.mask = torch.from_numpy(masked[anchors].toarray() != 0)
        self.mask[rows, torch.from_numpy(anchors)] = True
        self.scores = [s.masked_fill(self.mask, -1.0) for s in graph.scores(anchors)]
        self.zero = torch.stack([s == 0 for s in self.scores]).all(dim=0)
        self.ranked = graph.num_nodes - self.zero.sum(dim=1) - self.mask.sum(dim=1)
        self.heuristics = [_ranks(s) for s in self.scores]


def heuristic_ranks(scores: Tensor) -> Tensor:
    """:math:`r_h` of each node, ``[C, N]`` float32, from one heuristic's
    scores ``[C, N]`` (masked nodes at -1), by HeaRT's rule: the nodes scored
    above 0 from 1, ties at the best place of their value counted from the
    largest distinct one; a node scored 0 at the last place plus 1, a masked
    one plus 2."""
    return _ranks(scores)["rank"]


def _ranks(scores: Tensor) -> dict[str, Tensor]:
    """:func:`heuristic_ranks`, and the counts :func:`_partner_ranks` needs,
    per row."""
    positive = scores > 0
    ordered = torch.where(positive, scores, torch.inf).sort(dim=1).values
    below = torch.searchsorted(ordered, scores.contiguous())  # positives strictly below
    count = positive.sum(dim=1)
    top = ordered.gather(1, (count - 1).clamp(min=0)[:, None])
    below_top = torch.searchsorted(ordered, top).view(-1)
    second = ordered.gather(1, (below_top - 1).clamp(min=0)[:, None])
    below_second = torch.searchsorted(ordered, second).view(-1)
    last = torch.where(count > 0, below_top + 1, 0)
    rank = torch.where(positive, below_top[:, None] - below + 1,
                       torch.where(scores == 0, last[:, None] + 1, last[:, None] + 2))
    return {"rank": rank.float(), "count": count, "top": top.view(-1),
            "count_top": count - below_top, "count_second": below_top - below_second,
            "last": last}


def _partner_ranks(scores: Tensor, h: dict[str, Tensor], anchor: Tensor,
                   partner: Tensor) -> Tensor:
    """The ranks ``[R, N]`` of rows whose anchor (an index of ``scores``) also
    masks ``partner``: when the partner scored above 0, every node's rank moves
    up by the nodes no longer above it, those below it one place less."""
    score = scores[anchor]
    s_p = score.gather(1, partner[:, None]).view(-1)
    removed = s_p > 0
    at_top = s_p == h["top"][anchor]
    alone = h["count"][anchor] == 1
    shift = torch.where(~removed, 0, torch.where(
        ~at_top | alone, 1, torch.where(h["count_top"][anchor] > 1, 0, h["count_second"][anchor])))
    rank = h["rank"][anchor] - shift[:, None] + (removed[:, None] & (score > s_p[:, None]))
    rank.scatter_(1, partner[:, None], (h["last"][anchor] - shift + 2).float()[:, None])
    return rank


def _batch_negatives(ranks: _AnchorRanks, anchor: Tensor, partner: Tensor, half: int,
                     best: Tensor, rows: Tensor,
                     short: dict[int, tuple[Tensor, Tensor, int]]) -> None:
    """Fills ``best[rows]`` for rows whose anchors (indices of ``ranks``) have
    ``half`` nodes scored above 0; keeps the others in ``short``."""
    merged = torch.stack([_partner_ranks(s, h, anchor, partner)
                          for s, h in zip(ranks.scores, ranks.heuristics, strict=True)]).amin(0)
    partner_counted = ~ranks.mask[anchor, partner] & ~ranks.zero[anchor, partner]
    ranked = ranks.ranked[anchor] - partner_counted.long()
    full = ranked >= half
    if full.any():
        best[rows[full]] = torch.topk(-merged[full], half, dim=1).indices
    for i in (~full).nonzero().view(-1).tolist():
        unscored = ranks.zero[anchor[i]].clone()
        unscored[partner[i]] = False
        short[int(rows[i])] = (merged[i], unscored, int(ranked[i]))


def _short_anchor(merged: Tensor, unscored: Tensor, ranked: int, half: int,
                  rng: np.random.RandomState, anchor: int) -> Tensor:
    """A row with fewer than ``half`` nodes scored above 0: its ``ranked``
    best by ``merged``, then draws (with replacement) among the ``unscored``
    nodes; where none is unscored either, its candidates repeat in order."""
    best = torch.topk(-merged, ranked).indices
    pool = unscored.nonzero().view(-1).numpy()
    if len(pool):
        return torch.cat([best, torch.from_numpy(rng.choice(pool, half - ranked)).long()])
    if ranked == 0:
        raise ValueError(f"node {anchor} has a masked link with every other node: "
                         "it has no negatives")
    return best[torch.arange(half) % ranked]
