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
:class:`~plnlp_core.nn.edge_level.pair_memo.PairMemo`.
"""
import torch
import torch.nn.functional as F
from torch import Tensor

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
        self.offsets = (count.cumsum(0) - count).to(nodes.dtype)

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

    def sum(self, h: Tensor) -> Tensor:
        """:math:`\\mathbf{c}_t` of every pair, in ``h``'s dtype, ``[M, C]``."""
        return F.embedding_bag(self.nodes, h, self.offsets, mode="sum")


def _index_dtype(count: int) -> torch.dtype:
    return torch.int32 if count < 2**31 else torch.int64
