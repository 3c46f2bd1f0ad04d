r"""Common neighbours and paths of length 3 between node pairs, over a sparse
CSR adjacency :math:`A` (undirected, no self-loops), at ogbl-ppa's size.

For a pair :math:`(i, j)` let :math:`a` be its endpoint of lower degree and
:math:`b` the other. Its common neighbours are found by enumerating
:math:`k \in N(a)` from the CSR row of :math:`a` and testing
:math:`(b, k) \in E`,

.. math::
    N(i) \cap N(j) = \{k \in N(a) : A_{bk} = 1\},

:math:`\min(d_i, d_j)` membership tests per pair, made in chunks of at most
``max_candidates`` tests so that memory stays bounded whatever the number of
pairs. A test is one lookup in a dense table of all :math:`N^2` pairs on
small graphs (as :class:`plnlp_core.edge_set.EdgeSet`), else one
:func:`torch.searchsorted` over the CSR's sorted keys :math:`uN + v`.
"""
import functools
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.nn.edge_level import intersection
from plnlp_core.nn.edge_level.bit_rows import BitRows, dense_common_neighbor_sum, free_memory
from plnlp_core.nn.edge_level.common_neighbor_lists import CommonNeighborLists
from plnlp_core.nn.edge_level.fixed_point import int8_products
from plnlp_core.nn.edge_level.pair_memo import PairMemo
from plnlp_core.nn.edge_level.path_counts import TABLE_MEMORY_SHARE, SquaredAdjacency

MAX_CANDIDATES = 2**22
"""Membership tests per chunk: 4 M tests hold about 150 MB of indices."""


class AdjacencyLookup:
    r"""Degrees, CSR rows and constant-time edge tests of one sparse CSR
    adjacency.

    Args:
        adj (Tensor): Sparse CSR adjacency, shape ``[N, N]``, symmetric.

    Attributes:
        memo (PairMemo): What is kept of the pair sets scored again and
            again on this graph (evaluation's), dropped with the lookup.
    """

    def __init__(self, adj: Tensor, edge_set: EdgeSet | None = None,
                 bit_rows: Callable[[], BitRows] | None = None) -> None:
        self.adj = adj
        self.num_nodes = adj.size(0)
        self.crow = adj.crow_indices()
        self.col = adj.col_indices()
        self.degree = self.crow.diff()
        if edge_set is None:
            keys = _rows(self.crow) * self.num_nodes + self.col
            edge_set = EdgeSet.from_sorted_keys(keys, self.num_nodes, undirected=True)
        self.edge_set = edge_set
        self.keys = self.edge_set.keys
        self._make_bit_rows = bit_rows  # no lambda of self here: a cycle waits for the collector
        self._bit_rows: BitRows | None = None
        self._bit_words: np.ndarray | None = None
        self.memo = PairMemo()
        self.root: AdjacencyLookup | None = None
        """The graph this one was made from by :meth:`without` (``None``:
        none)."""
        self._squared: SquaredAdjacency | None = None
        self._squared_fits: bool | None = None
        self._edge_path3: Tensor | None = None

    @property
    def table(self) -> Tensor | None:
        """The edge set's dense table (:attr:`EdgeSet.table`), made on first
        read where it was deferred; ``None`` on a large graph."""
        return self.edge_set.table

    def dense(self) -> Tensor:
        """The adjacency as a dense bool matrix ``[N, N]`` (the table's view)."""
        return self.table.view(self.num_nodes, self.num_nodes)

    def bit_rows(self) -> BitRows:
        """The dense table's rows packed into bits, made on first use."""
        if self._bit_rows is None:
            make = self._make_bit_rows
            self._bit_rows = make() if make is not None else BitRows(self.dense())
        return self._bit_rows

    def bit_words(self) -> np.ndarray:
        """The CSR rows as :func:`~plnlp_core.nn.edge_level.intersection.bit_words`,
        made on first use."""
        if self._bit_words is None:
            self._bit_words = intersection.bit_words(self.crow.numpy(), self.col.numpy())
        return self._bit_words

    def contains(self, u: Tensor, v: Tensor) -> Tensor:
        """A bool mask: which :math:`(u_t, v_t)` are edges."""
        return self.edge_set.contains_keys(u * self.num_nodes + v)

    def without(self, pairs: Tensor) -> "AdjacencyLookup":
        """The lookup of :func:`remove_edges`'s graph, made from this one's
        parts (its sorted keys, dense table and bit rows less the removed
        entries) rather than anew: on ogbl-ddi, without a step's 65,536
        positives, 50 ms against 140 ms."""
        kept, removed, adj = _removal(self, pairs)
        if removed is None:
            return AdjacencyLookup(adj, self.edge_set, self.bit_rows)
        table = None
        if self.edge_set.dense:
            table = functools.partial(_cleared, self.edge_set, removed)
        edge_set = EdgeSet.from_sorted_keys(self.keys.index_select(0, kept), self.num_nodes,
                                            undirected=True, table=table)
        reduced = AdjacencyLookup(adj, edge_set, lambda: self.bit_rows().without(removed))
        reduced.root = self.root or self
        return reduced

    def squared(self) -> SquaredAdjacency | None:
        """The :math:`A^2` table of this graph, made on first use where the
        graph has a dense table and the table fits
        :data:`~plnlp_core.nn.edge_level.path_counts.TABLE_MEMORY_SHARE` of
        the free memory; else ``None``."""
        if self._squared_fits is None:
            self._squared_fits = self.edge_set.dense and (
                SquaredAdjacency.nbytes(self.num_nodes)
                <= TABLE_MEMORY_SHARE * free_memory(self.col.device))
        if self._squared_fits and self._squared is None:
            self._squared = SquaredAdjacency(self.crow, self.col)
        return self._squared

    def edge_path3_counts(self) -> Tensor:
        """:func:`path3_counts` of every edge, in the order of :attr:`keys`
        (each less its own edge), counted once for both directions on first
        use: about what one training epoch's positives cost."""
        if self._edge_path3 is None:
            n = self.num_nodes
            u, v = self.keys // n, self.keys % n
            upper = u < v
            half = _path3_counts(self, torch.stack([u[upper], v[upper]], dim=1), MAX_CANDIDATES)
            counts = torch.zeros(self.keys.numel(), device=self.keys.device)
            counts[upper] = half
            counts[torch.searchsorted(self.keys, v[upper] * n + u[upper])] = half
            self._edge_path3 = counts
        return self._edge_path3


def _cleared(edge_set: EdgeSet, removed: Tensor) -> Tensor:
    """A copy of ``edge_set``'s dense table without the keys ``removed``."""
    table = edge_set.table.clone()
    table[removed] = False
    return table


def _rows(crow: Tensor) -> Tensor:
    """The row of each CSR entry."""
    n = crow.numel() - 1
    return torch.repeat_interleave(torch.arange(n, device=crow.device), crow.diff(),
                                   output_size=int(crow[-1]))


def remove_edges(lookup: AdjacencyLookup, pairs: Tensor) -> Tensor:
    r"""The adjacency of ``lookup`` without those of ``pairs`` that are
    edges, in both directions:
    :math:`A - \sum_{(i, j) \in P \cap E} (e_i e_j^\top + e_j e_i^\top)`.
    Training removes its positive edges this way (NCN's target-link
    removal; :meth:`AdjacencyLookup.without` gives the graph's lookup);
    pairs that are no edge (negatives, most walk pairs) change nothing."""
    return _removal(lookup, pairs)[2]


def _removal(lookup: AdjacencyLookup, pairs: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
    """The positions of the kept entries in ``lookup.keys``, the removed
    keys (ascending; ``None`` for a graph without edges) and the adjacency
    of :func:`remove_edges`."""
    adj, keys, n = lookup.adj, lookup.keys, lookup.num_nodes
    if keys.numel() == 0:
        return keys, None, adj
    pairs = pairs[lookup.contains(pairs[:, 0], pairs[:, 1])]  # one table lookup where dense
    query = torch.cat([pairs[:, 0] * n + pairs[:, 1], pairs[:, 1] * n + pairs[:, 0]])
    # sorted, the queries walk the keys in order: 21 ms against 66 ms for ogbl-ddi's 131,072
    query = query.sort().values
    pos = torch.searchsorted(keys, query).clamp(max=keys.numel() - 1)
    keep = torch.ones_like(keys, dtype=torch.bool)
    keep[pos[keys[pos] == query]] = False
    kept = keep.nonzero().squeeze(1)  # one pass over the entries, then gathers
    removed = keys[~keep]
    counts = lookup.degree.clone().index_add_(0, removed // n, -torch.ones_like(removed))
    crow = torch.cat([counts.new_zeros(1), counts.cumsum(0)]).to(lookup.crow.dtype)
    adj = torch.sparse_csr_tensor(crow, lookup.col.index_select(0, kept),
                                  adj.values().index_select(0, kept), (n, n),
                                  check_invariants=False)  # a valid CSR's rows, entries left out
    return kept, removed, adj


def drop_edges(lookup: AdjacencyLookup, p: float) -> Tensor:
    r"""The adjacency of ``lookup`` without a uniformly drawn fraction
    :math:`p` of its undirected edges, both directions of each together:
    :math:`A - \sum_{(i, j) \in D} (e_i e_j^\top + e_j e_i^\top)` with
    :math:`D \subset E` drawn without replacement, :math:`|D| =
    \mathrm{round}(p |E|)` (:func:`dropped_edges`). Training thins its
    graph this way (NCN's edge dropout); the kept entries keep their
    values."""
    return remove_edges(lookup, dropped_edges(lookup, p))


def dropped_edges(lookup: AdjacencyLookup, p: float) -> Tensor:
    """:math:`D`: ``round(p |E|)`` of ``lookup``'s undirected edges drawn
    without replacement, shape ``[|D|, 2]``."""
    n = lookup.num_nodes
    upper = lookup.keys[lookup.keys // n < lookup.keys % n]
    dropped = upper[torch.randperm(upper.numel(), device=upper.device)
                    [:round(p * upper.numel())]]
    return torch.stack([dropped // n, dropped % n], dim=1)


def _chunks(work: Tensor, max_work: int) -> list[tuple[int, int]]:
    """Consecutive ranges of rows whose ``work`` sums to at most ``max_work``
    (a single row above it is a range of its own)."""
    ends = work.cumsum(0)
    total, m = int(ends[-1]) if work.numel() else 0, work.numel()
    if total <= max_work:
        return [(0, m)] if m else []
    ranges, start, done = [], 0, 0
    while start < m:
        stop = int(torch.searchsorted(ends, done + max_work, right=True))
        stop = max(stop, start + 1)
        ranges.append((start, stop))
        done, start = int(ends[stop - 1]), stop
    return ranges


def common_neighbor_index(
    lookup: AdjacencyLookup, pairs: Tensor, max_candidates: int = MAX_CANDIDATES,
) -> tuple[Tensor, Tensor]:
    r"""Every common neighbour of every pair, as two aligned vectors: the
    pair's row in ``pairs`` (ascending) and the node :math:`k`,
    :math:`k \in N(i) \cap N(j)`. Pairs with no common neighbour do not
    appear."""
    u, v = pairs[:, 0], pairs[:, 1]
    du, dv = lookup.degree[u], lookup.degree[v]
    swap = du > dv
    a, b = torch.where(swap, v, u), torch.where(swap, u, v)
    work = torch.minimum(du, dv)
    found_pairs, found_nodes = [], []
    for start, stop in _chunks(work, max_candidates):
        w = work[start:stop]
        total = int(w.sum())
        if total == 0:
            continue
        row = torch.repeat_interleave(torch.arange(stop - start, device=pairs.device), w,
                                      output_size=total)
        # candidate t of a pair sits at crow[a] + (t - the pair's first candidate)
        base = lookup.crow[a[start:stop]] - (w.cumsum(0) - w)
        k = lookup.col[base[row] + torch.arange(total, device=pairs.device)]
        hit = lookup.contains(b[start:stop][row], k)
        found_pairs.append(row[hit] + start)
        found_nodes.append(k[hit])
    if not found_pairs:
        empty = pairs.new_zeros(0)
        return empty, empty
    return torch.cat(found_pairs), torch.cat(found_nodes)


def common_neighbor_sum(lookup: AdjacencyLookup, h: Tensor, pairs: Tensor,
                        max_candidates: int = MAX_CANDIDATES,
                        rows: Callable[[Tensor], Tensor] | None = None) -> tuple[Tensor, Tensor]:
    r"""The sum of the common neighbours' vectors and their number,

    .. math::
        \mathbf{c}_{ij} = \sum_{k \in N(i) \cap N(j)} f(\mathbf{h}_k)
        = \big((\mathbf{A}_{i} \odot \mathbf{A}_{j}) f(\mathbf{H})\big), \qquad
        n_{ij} = |N(i) \cap N(j)|,

    with ``rows`` a row-wise map :math:`f` (the identity by default), in one
    of three ways (:func:`summing_way`): over the lists of
    :func:`cpu_common_neighbor_lists`, in fp32, with :math:`f` applied to
    the rows the lists name alone where they are few (on a sparse graph a
    step's common neighbours are a few hundred of its nodes); as dense
    products of the graph's bit rows (:func:`dense_common_neighbor_sum`), in
    bfloat16 under bfloat16 autocast (the 0/1 rows are exact;
    :math:`\mathbf{H}` and the sums are rounded as autocast rounds a linear
    layer's) and in fp32 otherwise; or as one sparse product
    :math:`\mathbf{S} \mathbf{H}`, where :math:`\mathbf{S}` (``[M, N]``,
    CSR) marks the common neighbours found by :func:`common_neighbor_index`.
    For pairs the graph's memo remembers, their lists, made once, are
    summed in fp32.

    Returns:
        :math:`\mathbf{C}`, shape ``[M, C]``, and :math:`n`, shape ``[M]``.
    """
    dtype = torch.bfloat16 if _autocast_bfloat16(h.device) else torch.float32
    with torch.autocast(h.device.type, enabled=False):
        lists = lookup.memo.get(pairs, "common_neighbors",
                                lambda: common_neighbor_lists(lookup, pairs, max_candidates),
                                lambda: CommonNeighborLists.max_bytes(lookup.degree, pairs))
        way = "lists" if lists is not None else summing_way(lookup, pairs)
        if way == "lists":
            if lists is None:
                lists = cpu_common_neighbor_lists(lookup, pairs)
            return lists.sum(h.float(), rows), lists.count
        x = h if rows is None else rows(h)
        if way == "dense":
            return dense_common_neighbor_sum(lookup.bit_rows(), x, pairs, dtype)
        row_of, nodes = common_neighbor_index(lookup, pairs, max_candidates)
        m = pairs.size(0)
        count = torch.bincount(row_of, minlength=m)
        crow = torch.cat([count.new_zeros(1), count.cumsum(0)])
        select = torch.sparse_csr_tensor(crow, nodes, torch.ones(nodes.numel(), device=h.device),
                                         (m, h.size(0)))
        return torch.sparse.mm(select, x.float()), count


def summing_way(lookup: AdjacencyLookup, pairs: Tensor) -> str:
    r"""How :func:`common_neighbor_sum` sums: ``"dense"``, the bit-row
    products, where :func:`dense_is_cheaper` on a GPU and on a CPU with int8
    matrix units (:func:`~plnlp_core.nn.edge_level.fixed_point.int8_products`,
    where they took 0.72 s with their backward on ogbl-ddi's 131,072 pairs,
    one thread of a Sapphire Rapids Xeon); ``"lists"``, the compiled lists
    of :func:`cpu_common_neighbor_lists`, on every other CPU (the same
    pairs: 0.6 s against the dense way's 5.1 s in fp32, one thread of an AMD
    EPYC without AMX, where bfloat16 is not native either); ``"walk"``, the
    CSR walk and a sparse product, on a GPU elsewhere."""
    on_cpu = pairs.device.type == "cpu"
    if dense_is_cheaper(lookup, pairs) and (not on_cpu or int8_products(pairs.device)):
        return "dense"
    return "lists" if on_cpu else "walk"


def summing_choice(device: torch.device) -> str:
    """How :func:`summing_way` sums on ``device``, in words (a training
    worker prints it; the command shows it with ``--verbose``)."""
    if device.type != "cpu":
        return "bit-row products on dense graphs, else a CSR walk and a sparse product (GPU)"
    capability = torch.backends.cpu.get_cpu_capability()
    if int8_products(device):
        return (f"int8 bit-row products on dense graphs (AMX, {capability}), else compiled "
                "lists")
    return (f"compiled lists on {torch.get_num_threads()} thread(s) (this CPU has no AMX: "
            f"{capability})")


def common_neighbor_lists(lookup: AdjacencyLookup, pairs: Tensor,
                          max_candidates: int = MAX_CANDIDATES) -> CommonNeighborLists:
    """The common neighbours of ``pairs`` as lists: on CPUs by
    :func:`cpu_common_neighbor_lists`; on a GPU from the bit rows where
    :func:`dense_is_cheaper`, else by the CSR walk."""
    if pairs.device.type == "cpu":
        return cpu_common_neighbor_lists(lookup, pairs)
    if dense_is_cheaper(lookup, pairs):
        return CommonNeighborLists.from_bit_rows(lookup.bit_rows(), pairs)
    rows, nodes = common_neighbor_index(lookup, pairs, max_candidates)
    return CommonNeighborLists.from_index(rows, nodes, pairs.size(0))


TABLE_TESTS = 1 / 16
r"""A pair set's membership tests (:math:`\sum_t \min(d_{i_t}, d_{j_t})`)
past this share of :math:`N^2` read the graph's dense table, made for them
if need be (a byte a possible pair); fewer merge the CSR rows."""


def cpu_common_neighbor_lists(lookup: AdjacencyLookup, pairs: Tensor) -> CommonNeighborLists:
    """:meth:`CommonNeighborLists.from_csr` of the graph of ``lookup``: on a
    graph small enough for a dense table, from its rows' bit words where the
    pairs' tests are at least the words' number (on ogbl-ddi a step's
    131,072 pairs in 0.14 s against 0.35-0.59 s in the table), else from its dense table where
    that is made already or the tests are past :data:`TABLE_TESTS` of it;
    else by merging CSR rows."""
    edge_set, table, words = lookup.edge_set, None, None
    if edge_set.dense:
        tests = int(torch.minimum(lookup.degree[pairs[:, 0]], lookup.degree[pairs[:, 1]]).sum())
        if tests >= lookup.num_nodes * intersection.words_a_row(lookup.num_nodes):
            words = lookup.bit_words()
        elif edge_set.table_made or tests >= TABLE_TESTS * lookup.num_nodes**2:
            table = edge_set.table
    return CommonNeighborLists.from_csr(lookup.crow, lookup.col, lookup.degree, pairs, table,
                                        words)


DENSE_ROW_COST = 12
r"""How many entries of a dense row :math:`\mathbf{A}_i \odot \mathbf{A}_j`
cost as much as one membership test of the CSR walk: measured on ogbl-ddi
(2 CPU cores, 64 channels) before the rows were packed into bits, about
150 ns a test against 11 ns an entry; the bit rows only made the dense
way cheaper."""


def dense_is_cheaper(lookup: AdjacencyLookup, pairs: Tensor) -> bool:
    r"""Whether :math:`(\mathbf{A}_i \odot \mathbf{A}_j) \mathbf{H}` as dense
    products beats the CSR walk: the graph has a dense table (at most
    :attr:`EdgeSet.DENSE_LIMIT` pairs) and :math:`N` is below
    :data:`DENSE_ROW_COST` times the pairs' mean :math:`\min(d_i, d_j)`."""
    if not lookup.edge_set.dense or pairs.size(0) == 0:
        return False
    work = torch.minimum(lookup.degree[pairs[:, 0]], lookup.degree[pairs[:, 1]])
    return lookup.num_nodes < DENSE_ROW_COST * float(work.float().mean())


def _autocast_bfloat16(device: torch.device) -> bool:
    return (torch.is_autocast_enabled(device.type)
            and torch.get_autocast_dtype(device.type) == torch.bfloat16)


def path3_counts(lookup: AdjacencyLookup, pairs: Tensor,
                 max_candidates: int = MAX_CANDIDATES, edges_kept: bool = False) -> Tensor:
    r"""The number of paths of length 3 between each pair,

    .. math::
        p_{ij} = \sum_{k \in N(a) \setminus \{b\}} |N(k) \cap N(b)|
        - (d_a - 1) A_{ab},

    which equals :math:`(A^3)_{ij}` for a non-edge; the correction drops
    the walks through :math:`(i, j)` itself when it is an edge. Each pair
    is expanded to the pairs :math:`(k, b)`, whose common neighbours are
    counted in chunks. Shape ``[M]``, float. Pairs the graph's memo
    remembers are counted once; with ``edges_kept`` (training, which scores
    every edge of its graph every epoch), pairs that are edges read the
    graph's :meth:`~AdjacencyLookup.edge_path3_counts`."""
    kept = lookup.memo.get(pairs, "path3", lambda: _path3_counts(lookup, pairs, max_candidates),
                           lambda: 4 * pairs.size(0))
    if kept is not None:
        return kept
    if not edges_kept:
        return _path3_counts(lookup, pairs, max_candidates)
    is_edge = lookup.contains(pairs[:, 0], pairs[:, 1])
    if not bool(is_edge.any()):
        return _path3_counts(lookup, pairs, max_candidates)
    edges = pairs[is_edge]
    counts = torch.empty(pairs.size(0), device=pairs.device)
    counts[is_edge] = lookup.edge_path3_counts()[torch.searchsorted(
        lookup.keys, edges[:, 0] * lookup.num_nodes + edges[:, 1])]
    counts[~is_edge] = _path3_counts(lookup, pairs[~is_edge], max_candidates)
    return counts


def _path3_counts(lookup: AdjacencyLookup, pairs: Tensor, max_candidates: int) -> Tensor:
    """:func:`path3_counts` made: each expanded pair's :math:`(A^2)_{kb}`
    read from the graph's :meth:`~AdjacencyLookup.squared` table where it
    has one, else counted by :func:`common_neighbor_index`."""
    u, v = pairs[:, 0], pairs[:, 1]
    du, dv = lookup.degree[u], lookup.degree[v]
    swap = du > dv
    a, b = torch.where(swap, v, u), torch.where(swap, u, v)
    work = lookup.degree[a]
    total_counts = torch.zeros(pairs.size(0), device=pairs.device)
    squared = lookup.squared()
    # read from the table, or at most max_candidates / 16 expanded pairs each testing its own chunk
    step = max_candidates if squared is not None else max(max_candidates // 16, 1)
    for start, stop in _chunks(work, step):
        w = work[start:stop]
        total = int(w.sum())
        if total == 0:
            continue
        row = torch.repeat_interleave(torch.arange(start, stop, device=pairs.device), w,
                                      output_size=total)
        offset = torch.arange(total, device=pairs.device) - torch.repeat_interleave(
            w.cumsum(0) - w, w, output_size=total)
        k = lookup.col[lookup.crow[a[row]] + offset]
        keep = k != b[row]
        row, k, end = row[keep], k[keep], b[row][keep]
        if squared is not None:
            total_counts.index_add_(0, row, squared.entries(k * lookup.num_nodes + end).float())
            continue
        hits, _ = common_neighbor_index(lookup, torch.stack([k, end], dim=1), max_candidates)
        total_counts.index_add_(0, row[hits], torch.ones(hits.numel(), device=pairs.device))
    through_edge = lookup.contains(a, b) & (lookup.degree[a] > 0)
    total_counts -= through_edge.float() * (lookup.degree[a] - 1).clamp(min=0).float()
    return total_counts
