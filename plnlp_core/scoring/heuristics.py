r"""Neighbourhood heuristics for link prediction, the baselines a learned
model should beat. Each weighs the common neighbours of :math:`u` and
:math:`v` in the undirected, unweighted training graph :math:`A` (no
self-loops) by a function :math:`f` of their degree :math:`d_w`,

.. math::
    s(u, v) = \sum_{w \in N(u) \cap N(v)} f(d_w)
            = \left(A \, \mathrm{diag}(f(d)) \, A\right)_{uv},

and :data:`HEURISTICS` maps each name to its :math:`f`. Pairs are scored
in chunks of sparse row gathers, :math:`\sum_w A_{uw} (A\,\mathrm{diag}(f))_{vw}`,
so ogbl-ppa's 21 M training edges and 12 M evaluation pairs fit in memory.
"""
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from plnlp_core.registry import Registry

DENSE_ENTRIES = 2**26
"""Largest :math:`N^2` for which a graph's ``[N, N]`` tables are held dense
(256 MB of float32: ogbl-ddi's 4,267 nodes)."""

HEURISTICS: Registry[Callable[[np.ndarray], np.ndarray]] = Registry("heuristic")


@HEURISTICS.register("cn")
def common_neighbours(degree: np.ndarray) -> np.ndarray:
    r"""Common neighbours, :math:`|N(u) \cap N(v)|`: :math:`f(d_w) = 1`."""
    return np.ones(degree.shape, dtype=np.float32)


@HEURISTICS.register("aa")
def adamic_adar(degree: np.ndarray) -> np.ndarray:
    r"""Adamic-Adar, :math:`\sum_{w \in N(u) \cap N(v)} 1 / \log d_w`. A
    common neighbour of two nodes has :math:`d_w \ge 2`; lower degrees, whose
    value is never used, are clamped to 2."""
    return (1.0 / np.log(np.maximum(degree, 2))).astype(np.float32)


@HEURISTICS.register("ra")
def resource_allocation(degree: np.ndarray) -> np.ndarray:
    r"""Resource allocation, :math:`\sum_{w \in N(u) \cap N(v)} 1 / d_w`."""
    return (1.0 / np.maximum(degree, 1)).astype(np.float32)


def adjacency(edges: Tensor, num_nodes: int) -> sp.csr_array:
    """The undirected, unweighted adjacency of ``edges`` (``[E, 2]``),
    without self-loops, as a float32 CSR array."""
    ends = edges.cpu().numpy()
    rows, cols = np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]])
    keep = rows != cols
    adj = sp.csr_array((np.ones(int(keep.sum()), dtype=np.float32), (rows[keep], cols[keep])),
                       shape=(num_nodes, num_nodes))
    adj.data[:] = 1.0  # repeated edges were summed
    return adj


def heuristic_scores(name: str, adj: sp.csr_array, pairs: Tensor,
                     batch_size: int = 16384) -> Tensor:
    """The score of heuristic ``name`` for each of ``pairs`` (``[M, 2]``) on
    the graph ``adj`` (see :func:`adjacency`), as a float32 ``[M]`` tensor."""
    f = HEURISTICS.get(name)(np.diff(adj.indptr))
    weighted = adj.copy()
    weighted.data *= f[weighted.indices]
    u, v = (pairs[:, i].cpu().numpy() for i in (0, 1))
    chunks = [adj[u[s:s + batch_size]].multiply(weighted[v[s:s + batch_size]]).sum(axis=1)
              for s in range(0, len(u), batch_size)]
    return torch.from_numpy(np.concatenate(chunks, dtype=np.float32))


def heuristic_scorer(name: str, adj: sp.csr_array,
                     batch_size: int = 16384) -> Callable[[Tensor], Tensor]:
    r"""Heuristic ``name`` of any pairs ``[M, 2]`` on ``adj``: read from its
    dense ``[N, N]`` table :math:`A \, \mathrm{diag}(f(d)) \, A` where
    :math:`N^2` is at most :data:`DENSE_ENTRIES` (one matrix product, then a
    gather per pair), else :func:`heuristic_scores` in chunks of
    ``batch_size`` pairs."""
    n = adj.shape[0]
    if n * n > DENSE_ENTRIES:
        return lambda pairs: heuristic_scores(name, adj, pairs, batch_size)
    dense = torch.from_numpy(adj.toarray())
    table = (dense * torch.from_numpy(HEURISTICS.get(name)(np.diff(adj.indptr)))) @ dense
    return lambda pairs: table[pairs[:, 0].cpu(), pairs[:, 1].cpu()]
