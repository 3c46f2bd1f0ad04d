r"""The square of a graph's adjacency as a dense table, for the paths of
length 3 between pairs,

.. math::
    p_{ij} = \sum_{k \in N(a) \setminus \{b\}} (A^2)_{kb} - (d_a - 1) A_{ab},

each :math:`(A^2)_{kb} = |N(k) \cap N(b)|` one read of a table made once a
graph (every walk :math:`k \to m \to b` of the CSR added into it) rather
than :math:`\min(d_k, d_b)` membership tests. Walks are added with
``index_add_`` rather than made by ``torch.sparse.mm`` of two CSR tensors,
which in torch 2.13 on CPUs kept about 40 MB a call (a 5,000-node graph's
product) until the process ended.
"""
from collections.abc import Iterator

import torch
from torch import Tensor

TABLE_MEMORY_SHARE = 0.125
"""The share of the free memory the table of :math:`N^2` int32 may take;
past it paths are counted by membership tests."""


class SquaredAdjacency:
    r""":math:`A^2` of one graph as a dense int32 table ``[N * N]``.

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

    @staticmethod
    def nbytes(num_nodes: int) -> int:
        """Bytes the table of a graph of ``num_nodes`` takes."""
        return 4 * num_nodes**2

    def entries(self, keys: Tensor) -> Tensor:
        r""":math:`(A^2)_{kb}` at ``keys`` :math:`kN + b`, int32."""
        return self.table.index_select(0, keys)

    def _walk_keys(self, rows: Tensor, mids: Tensor, max_keys: int = 2**22) -> Iterator[Tensor]:
        r"""The keys :math:`rN + c` of the walks :math:`r \to m \to c`, one
        for each entry :math:`(r, m)` and each :math:`c` in row :math:`m` of
        the graph, about ``max_keys`` at a time."""
        degree = self.crow.diff()
        step = max(max_keys // max(int(degree.max()), 1), 1) if degree.numel() else 1
        for start in range(0, rows.numel(), step):
            r, m = rows[start:start + step], mids[start:start + step]
            w = degree[m]
            total = int(w.sum())
            first = torch.repeat_interleave(self.crow[m], w, output_size=total)
            offset = torch.arange(total, device=self.col.device) - torch.repeat_interleave(
                w.cumsum(0) - w, w, output_size=total)
            yield torch.repeat_interleave(r, w, output_size=total) * self.num_nodes + self.col[
                first + offset]
