import weakref
from typing import Any

import torch
from torch import Tensor
from torch_geometric.nn import SAGEConv

from plnlp_core.nn.encoders.registry import ENCODERS

DENSE_MIN_DENSITY = 1 / 16
"""The share of nonzero entries from which a GPU aggregates faster over a
dense copy of the adjacency (ogbl-ddi's training graph: 11.7 %)."""
DENSE_MAX_ENTRIES = 2**26
"""The largest dense copy made: 2^26 entries, 256 MiB in fp32 (8,192 nodes)."""


class _SymmetricMeanSpMM(torch.autograd.Function):
    """``D^{-1} A X`` whose backward reuses ``A`` itself (``A = A^T``)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, adj: Tensor, x: Tensor) -> Tensor:
        inv_deg = _inverse_degree(adj).unsqueeze(-1)
        ctx.adj, ctx.inv_deg = adj, inv_deg
        return (adj @ x) * inv_deg

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: Tensor) -> tuple[None, Tensor]:
        return None, ctx.adj @ (grad * ctx.inv_deg)


def _inverse_degree(adj: Tensor) -> Tensor:
    crow = adj.crow_indices()
    return (crow[1:] - crow[:-1]).clamp(min=1).to(adj.dtype).reciprocal()


def dense_pays_off(num_nodes: int, nnz: int, device: torch.device) -> bool:
    """Whether a GPU aggregates faster over a dense ``[N, N]`` copy of an
    adjacency with ``nnz`` entries: a tensor-core product over all N²
    entries (in bfloat16 under autocast) beats cuSPARSE's fp32 product over
    the nonzeros once a sixteenth of them are nonzero. On CPUs the two
    take about as long at ddi's density, and the sparse product stays."""
    entries = num_nodes * num_nodes
    return (device.type == "cuda" and entries <= DENSE_MAX_ENTRIES
            and nnz >= DENSE_MIN_DENSITY * entries)


def symmetric_mean_spmm(adj: Tensor, x: Tensor) -> Tensor:
    r"""Mean aggregation over a symmetric sparse CSR adjacency,

    .. math::
        \mathbf{Y} = \mathbf{D}^{-1} \mathbf{A} \mathbf{X}, \qquad
        \frac{\partial \mathcal{L}}{\partial \mathbf{X}}
        = \mathbf{A}^\top \mathbf{D}^{-1} \mathbf{G}
        = \mathbf{A} \mathbf{D}^{-1} \mathbf{G},

    so the backward pass is one more sum-SpMM with the same matrix instead
    of a transpose (which PyTorch's CSR ``reduce="mean"`` backward sorts
    anew on every call). Rows without neighbours give zeros. The product
    runs in ``adj``'s dtype (fp32 under bfloat16 autocast too).
    """
    with torch.autocast(x.device.type, enabled=False):
        return _SymmetricMeanSpMM.apply(adj, x.to(adj.dtype))


@ENCODERS.register("sage")
class SymmetricSAGEConv(SAGEConv):
    r"""GraphSAGE with mean aggregation (Hamilton et al.),

    .. math::
        \mathbf{x}'_i = \mathbf{W}_1 \mathbf{x}_i + \mathbf{W}_2
        \frac{1}{|\mathcal{N}(i)|} \sum_{j \in \mathcal{N}(i)} \mathbf{x}_j,

    for the undirected graphs PLNLP passes messages on: given a symmetric
    sparse CSR adjacency it aggregates with :func:`symmetric_mean_spmm`;
    anything else goes through :class:`~torch_geometric.nn.SAGEConv`.
    Where :func:`dense_pays_off` (a dense graph on a GPU) it multiplies by
    a dense copy of the adjacency instead, made once per adjacency while
    ``cached`` (as :class:`~torch_geometric.nn.GCNConv` caches its
    normalised one), under autocast in bfloat16 like the layer's linear
    maps. Takes :class:`SAGEConv`'s arguments.

    Args:
        cached (bool): Keep the dense copy for the next pass over the same
            adjacency tensor. (default: ``True``)
    """

    def __init__(self, *args: Any, cached: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cached = cached
        self._dense_of: weakref.ref | None = None
        self._dense: tuple[Tensor, Tensor] | None = None

    def message_and_aggregate(self, adj_t: Tensor, x: tuple[Tensor, Tensor]) -> Tensor:
        """Mean aggregation over a sparse CSR ``adj_t``: the symmetric graph's
        (``x``'s two sides the same tensor), or a bipartite one's (a sampled
        neighbourhood's targets against its sources, a chunk of rows), whose
        backward goes through the transpose as torch's CSR product gives it."""
        if self.aggr == "mean" and isinstance(adj_t, Tensor) and adj_t.layout == torch.sparse_csr:
            if x[0] is not x[1]:
                return (adj_t @ x[0].to(adj_t.dtype)) * _inverse_degree(adj_t).unsqueeze(-1)
            if dense_pays_off(adj_t.size(0), adj_t._nnz(), adj_t.device):
                dense, inv_deg = self._dense_copy(adj_t)
                return (dense @ x[0]) * inv_deg
            return symmetric_mean_spmm(adj_t, x[0])
        return super().message_and_aggregate(adj_t, x)

    def _dense_copy(self, adj: Tensor) -> tuple[Tensor, Tensor]:
        """``adj`` as a dense matrix and its rows' inverse degrees."""
        if self._dense_of is not None and self._dense_of() is adj:
            return self._dense
        dense = (adj.to_dense(), _inverse_degree(adj).unsqueeze(-1))
        if self.cached:
            self._dense_of, self._dense = weakref.ref(adj), dense
        return dense
