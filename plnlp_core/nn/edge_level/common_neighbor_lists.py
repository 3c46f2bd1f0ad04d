r"""The common neighbours of a fixed set of pairs as flat lists, made once,
so that each scoring only sums node vectors over them,

.. math::
    \mathbf{c}_{t} = \sum_{k \in N(i_t) \cap N(j_t)} \mathbf{h}_k
    = \sum_{r = o_t}^{o_{t+1} - 1} \mathbf{h}_{\kappa_r},

with the nodes :math:`\kappa` of pair :math:`t` at
:math:`o_t, \dots, o_{t+1} - 1`: one
:func:`torch.nn.functional.embedding_bag` in sum mode, which on CPUs gathers
and adds rows of :math:`\mathbf{H}` at about 2 ns a neighbour of 64
channels (one thread: 0.21 s for the 110 M common neighbours of
ogbl-ddi's valid and test pairs, whose rows took 5.5 s to make again at
every evaluation). Evaluation's pairs keep them in their graph's
:class:`~plnlp_core.nn.edge_level.pair_memo.PairMemo`. On CPUs the lists are
made, and summed with a backward pass, by the compiled loops of
:mod:`~plnlp_core.nn.edge_level.intersection`, which is how training steps
find common neighbours on CPUs without int8 matrix units.
"""
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from plnlp_core.nn.edge_level import intersection
from plnlp_core.nn.edge_level.bit_rows import BitRows, Int8Rows, chunk_bytes


class CommonNeighborLists:
    r"""Pair :math:`t`'s common neighbours at ``nodes[offsets[t]:offsets[t]
    + count[t]]``, ascending.

    Args:
        nodes (Tensor): The common neighbours of every pair, one after the
            other, int32 (int64 past :math:`2^{31}` of them).
        count (Tensor): :math:`n_t = |N(i_t) \cap N(j_t)|`, int64, ``[M]``.
    """

    def __init__(self, nodes: Tensor, count: Tensor) -> None:
        self.nodes, self.count = nodes, count
        self.bounds = torch.cat([count.new_zeros(1), count.cumsum(0)])
        self.offsets = self.bounds[:-1].to(nodes.dtype)
        self._named: tuple[int, tuple[Tensor, Tensor] | None] | None = None

    @classmethod
    def from_csr(cls, crow: Tensor, col: Tensor, degree: Tensor, pairs: Tensor,
                 table: Tensor | None = None,
                 words: np.ndarray | None = None) -> "CommonNeighborLists":
        r"""From a CPU graph's sorted CSR rows and its degrees, by
        :mod:`~plnlp_core.nn.edge_level.intersection`'s loops: from the
        rows' bit ``words`` (:func:`~plnlp_core.nn.edge_level.intersection.bit_words`)
        where given, else each candidate :math:`k \in N(a)` tested in
        ``table`` (the graph's dense ``[N * N]`` bool table) where given,
        else the two rows merged."""
        crow_, col_, degree = crow.numpy(), col.numpy(), degree.numpy()
        u, v = pairs[:, 0].numpy(), pairs[:, 1].numpy()
        tests = np.zeros(0, np.bool_) if table is None else table.numpy()
        threads = torch.get_num_threads()
        count = intersection.common_counts(crow_, col_, degree, u, v, tests, threads, words)
        bounds = np.zeros(count.size + 1, np.int64)
        np.cumsum(count, out=bounds[1:])
        nodes = np.empty(int(bounds[-1]), np.int32 if bounds[-1] < 2**31 else np.int64)
        intersection.common_fill(crow_, col_, degree, u, v, tests, bounds, nodes, threads,
                                 words)
        return cls(torch.from_numpy(nodes), torch.from_numpy(count))

    @classmethod
    def from_index(cls, rows: Tensor, nodes: Tensor, num_pairs: int) -> "CommonNeighborLists":
        """From aligned vectors of pair rows (ascending) and their common
        neighbours, as :func:`~plnlp_core.nn.edge_level.common_neighbors.common_neighbor_index`
        finds them."""
        count = torch.bincount(rows, minlength=num_pairs)
        return cls(nodes.to(_index_dtype(nodes.numel())), count)

    @classmethod
    def from_bit_rows(cls, rows: BitRows, pairs: Tensor) -> "CommonNeighborLists":
        r"""From the bit rows :math:`\mathbf{A}_i \odot \mathbf{A}_j` of
        ``pairs``, chunk by chunk: the non-zero entries of each chunk's
        int8 rows."""
        step = max(chunk_bytes(pairs.device) // (8 * rows.width), 1)
        chunk_rows = Int8Rows(rows, max(min(step, pairs.size(0)), 1))
        nodes, counts = [], []
        for chunk in pairs.split(step):
            row, node = chunk_rows(chunk).nonzero(as_tuple=True)
            nodes.append(node.int())
            counts.append(torch.bincount(row, minlength=chunk.size(0)))
        count = torch.cat(counts) if counts else pairs.new_zeros(0)
        flat = torch.cat(nodes) if nodes else pairs.new_zeros(0, dtype=torch.int32)
        return cls(flat.to(_index_dtype(flat.numel())), count)

    @staticmethod
    def max_bytes(degree: Tensor, pairs: Tensor) -> int:
        r"""Bytes the lists of ``pairs`` take at most: a common neighbour
        is one of the :math:`\min(d_i, d_j)` neighbours of the pair's
        endpoint of lower degree."""
        most = int(torch.minimum(degree[pairs[:, 0]], degree[pairs[:, 1]]).sum())
        return most * _index_dtype(most).itemsize + 16 * pairs.size(0)

    def sum(self, h: Tensor, rows: Callable[[Tensor], Tensor] | None = None) -> Tensor:
        """:math:`\\mathbf{c}_t` of every pair, in ``h``'s dtype, ``[M, C]``,
        of ``rows(h)`` where a row-wise map is given: applied to the rows
        the lists name alone when they name fewer than :data:`FEW_ROWS` of
        ``h``'s; on CPUs with :class:`_ListSum`'s backward pass."""
        nodes, offsets = self.nodes, self.offsets
        if rows is not None:
            named = self.named_rows(h.size(0))
            if named is None:
                h = rows(h)
            else:
                h, nodes = rows(h.index_select(0, named[0])), named[1]
        if h.device.type != "cpu" or not (torch.is_grad_enabled() and h.requires_grad):
            return F.embedding_bag(nodes, h, offsets, mode="sum")
        return _ListSum.apply(h, nodes, self)

    def named_rows(self, num_nodes: int) -> tuple[Tensor, Tensor] | None:
        """The rows the lists name, ascending, and the lists in their
        places among them; ``None`` when the lists name more than
        :data:`FEW_ROWS` of ``num_nodes`` rows or have more entries than
        ``num_nodes`` (marking them would cost more than it saves)."""
        if self._named is None or self._named[0] != num_nodes:
            self._named = (num_nodes, None)
            if self.nodes.numel() <= num_nodes:
                named = torch.zeros(num_nodes, dtype=torch.bool, device=self.nodes.device)
                named[self.nodes] = True
                used = named.nonzero().squeeze(1)
                if used.numel() <= FEW_ROWS * num_nodes:
                    place = named.cumsum(0, dtype=self.nodes.dtype) - 1
                    self._named = (num_nodes, (used, place[self.nodes]))
        return self._named[1]


FEW_ROWS = 0.5
"""The share of the graph's rows below which a row-wise map is applied to
the named rows alone."""


class _ListSum(torch.autograd.Function):
    r"""Forward :math:`\mathbf{c}_t = \sum_{k} \mathbf{h}_k` over each
    pair's list (``embedding_bag``), backward the gradient of each
    :math:`\mathbf{c}_t` added to each of its common neighbours' rows
    (:func:`~plnlp_core.nn.edge_level.intersection.scatter_sums`, where
    ``embedding_bag``'s own backward sorts the lists: 9.5 s against 0.24 s on
    ogbl-ddi's 32.7 M common neighbours of 131,072 pairs, one thread)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, h: Tensor, nodes: Tensor,
                lists: CommonNeighborLists) -> Tensor:
        ctx.nodes, ctx.bounds, ctx.num_nodes = nodes, lists.bounds, h.size(0)
        return F.embedding_bag(nodes, h, lists.offsets, mode="sum")

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,
                 grad: Tensor) -> tuple[Tensor, None, None]:
        grad = grad.float().contiguous()
        out = grad.new_zeros(ctx.num_nodes, grad.size(1))
        intersection.scatter_sums(ctx.nodes.numpy(), ctx.bounds.numpy(), grad.numpy(),
                                  out.numpy(), torch.get_num_threads())
        ctx.nodes = ctx.bounds = None
        return out, None, None


def _index_dtype(count: int) -> torch.dtype:
    return torch.int32 if count < 2**31 else torch.int64
