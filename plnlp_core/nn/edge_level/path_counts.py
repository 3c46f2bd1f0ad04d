r"""The square of a graph's adjacency as a dense table, for the paths of
length 3 between pairs,

.. math::
    p_{ij} = \sum_{k \in N(a) \setminus \{b\}} (A^2)_{kb} - (d_a - 1) A_{ab},

each :math:`(A^2)_{kb} = |N(k) \cap N(b)|` one read of a table made once a
graph (every walk :math:`k \to m \to b` of the CSR added into it) rather
than :math:`\min(d_k, d_b)` membership tests. A training step's graph lacks
its positive edges :math:`P`, :math:`\tilde{A} = A - P`, and

.. math::
    \tilde{A}^2 = A^2 - (A P + P A - P^2),

so its entries are the input graph's less the walks through :math:`P`,
added into a table of zeros for the step's reads and taken away again
(:math:`AP = (PA)^\top`). Walks are added with ``index_add_`` rather than
made by ``torch.sparse.mm`` of two CSR tensors, which in torch 2.13 on CPUs
kept about 40 MB a call (a 5,000-node graph's product) until the process
ended.
"""
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor

TABLE_MEMORY_SHARE = 0.125
"""The share of the free memory the two tables of :math:`N^2` int32 may
take; past it paths are counted by membership tests."""


class SquaredAdjacency:
    r""":math:`A^2` of one graph as a dense int32 table ``[N * N]``, and a
    table of zeros for the corrections of graphs less some of its edges
    (:meth:`less`).

    Args:
        crow (Tensor): The graph's CSR row offsets, ``[N + 1]``.
        col (Tensor): Its CSR columns (symmetric).
    """

    def __init__(self, crow: Tensor, col: Tensor) -> None:
        self.num_nodes = n = crow.numel() - 1
        self.crow, self.col = crow, col
        self.table = torch.zeros(n * n, dtype=torch.int32, device=col.device)
        rows = torch.repeat_interleave(torch.arange(n, device=col.device), crow.diff())
        for keys in self._walk_keys(rows, col):
            self.table.index_add_(0, keys, torch.ones_like(keys, dtype=torch.int32))
        self.corrections = torch.zeros_like(self.table)

    @staticmethod
    def nbytes(num_nodes: int) -> int:
        """Bytes the two tables of a graph of ``num_nodes`` take."""
        return 2 * 4 * num_nodes**2

    def entries(self, keys: Tensor) -> Tensor:
        r""":math:`(A^2)_{kb}` at ``keys`` :math:`kN + b`, less the
        corrections :meth:`less` holds, int32."""
        return self.table.index_select(0, keys) - self.corrections.index_select(0, keys)

    @contextmanager
    def less(self, removed: Tensor | None) -> Iterator[None]:
        r"""While the block runs, :meth:`entries` are those of the graph
        less the entries ``removed`` (:math:`uN + v`, both directions, as
        :meth:`~plnlp_core.nn.edge_level.common_neighbors.AdjacencyLookup.without`
        removes them; ``None``: none): the walks
        :math:`r \to m \to c` of :math:`PA` (and their reverses, :math:`AP`)
        are added to the corrections, those of :math:`P^2` taken from them."""
        if removed is None or removed.numel() == 0:
            yield
            return
        n = self.num_nodes
        rows, mids = removed // n, removed % n
        p_crow = torch.cat([rows.new_zeros(1), torch.bincount(rows, minlength=n).cumsum(0)])
        touched = []
        for keys in self._walk_keys(rows, mids):  # PA, then AP = (PA)^T
            one = torch.ones_like(keys, dtype=torch.int32)
            self.corrections.index_add_(0, keys, one)
            self.corrections.index_add_(0, keys % n * n + keys // n, one)
            touched += [keys, keys % n * n + keys // n]
        for keys in self._walk_keys(rows, mids, p_crow, mids):  # P^2
            self.corrections.index_add_(0, keys, -torch.ones_like(keys, dtype=torch.int32))
            touched.append(keys)
        try:
            yield
        finally:
            for keys in touched:
                self.corrections.index_fill_(0, keys, 0)

    def _walk_keys(self, rows: Tensor, mids: Tensor, crow: Tensor | None = None,
                   col: Tensor | None = None, max_keys: int = 2**22) -> Iterator[Tensor]:
        r"""The keys :math:`rN + c` of the walks :math:`r \to m \to c`, one
        for each entry :math:`(r, m)` and each :math:`c` in row :math:`m` of
        the CSR ``crow``, ``col`` (this graph's by default), about
        ``max_keys`` at a time."""
        crow = self.crow if crow is None else crow
        col = self.col if col is None else col
        degree = crow.diff()
        step = max(max_keys // max(int(degree.max()), 1), 1) if degree.numel() else 1
        for start in range(0, rows.numel(), step):
            r, m = rows[start:start + step], mids[start:start + step]
            w = degree[m]
            total = int(w.sum())
            first = torch.repeat_interleave(crow[m], w, output_size=total)
            offset = torch.arange(total, device=col.device) - torch.repeat_interleave(
                w.cumsum(0) - w, w, output_size=total)
            yield torch.repeat_interleave(r, w, output_size=total) * self.num_nodes + col[
                first + offset]
