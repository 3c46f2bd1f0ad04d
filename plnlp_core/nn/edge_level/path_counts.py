r"""The square of a graph's adjacency as a dense table, for the paths of
length 3 between pairs,

.. math::
    p_{ij} = \sum_{k \in N(a) \setminus \{b\}} (A^2)_{kb} - (d_a - 1) A_{ab},

each :math:`(A^2)_{kb} = |N(k) \cap N(b)|` one read of a table made once a
graph (one sparse product) rather than :math:`\min(d_k, d_b)` membership
tests. A training step's graph lacks its positive edges :math:`P`,
:math:`\tilde{A} = A - P`, and

.. math::
    \tilde{A}^2 = A^2 - (A P + P A - P^2),

so its entries are the input graph's less the walks through :math:`P`:
two sparse products of :math:`P` (:math:`AP = (PA)^\top`), whose entries
are added into a table of zeros for the step's reads and taken away again.
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
        col (Tensor): Its CSR columns (symmetric, sorted rows).
    """

    def __init__(self, crow: Tensor, col: Tensor) -> None:
        self.num_nodes = n = crow.numel() - 1
        self.crow, self.col = crow, col
        rows, cols, values = _product(crow, col, crow, col, n)
        self.table = torch.zeros(n * n, dtype=torch.int32, device=col.device)
        self.table[rows * n + cols] = values
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
        removes them; ``None``: none)."""
        if removed is None or removed.numel() == 0:
            yield
            return
        n = self.num_nodes
        rows = removed // n
        p_crow = torch.cat([rows.new_zeros(1), torch.bincount(rows, minlength=n).cumsum(0)])
        pa = _product(p_crow, removed % n, self.crow, self.col, n)
        pp = _product(p_crow, removed % n, p_crow, removed % n, n)
        keys = torch.cat([pa[0] * n + pa[1], pa[1] * n + pa[0], pp[0] * n + pp[1]])
        self.corrections.index_add_(0, keys, torch.cat([pa[2], pa[2], -pp[2]]))
        try:
            yield
        finally:
            self.corrections.index_fill_(0, keys, 0)


def _product(crow_a: Tensor, col_a: Tensor, crow_b: Tensor, col_b: Tensor,
             n: int) -> tuple[Tensor, Tensor, Tensor]:
    """The entries of the product of two 0/1 CSR matrices ``[N, N]``: rows,
    columns and int32 values (one sparse product)."""
    left, right = (torch.sparse_csr_tensor(crow, col, torch.ones(col.numel(), device=col.device),
                                           (n, n))
                   for crow, col in ((crow_a, col_a), (crow_b, col_b)))
    product = torch.sparse.mm(left, right)
    rows = torch.repeat_interleave(torch.arange(n, device=col_a.device),
                                   product.crow_indices().diff())
    return rows, product.col_indices(), product.values().round().int()
