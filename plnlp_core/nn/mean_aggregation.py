import torch
from torch import Tensor
from torch_geometric.nn import SAGEConv


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


class SymmetricSAGEConv(SAGEConv):
    r"""GraphSAGE with mean aggregation (Hamilton et al.),

    .. math::
        \mathbf{x}'_i = \mathbf{W}_1 \mathbf{x}_i + \mathbf{W}_2
        \frac{1}{|\mathcal{N}(i)|} \sum_{j \in \mathcal{N}(i)} \mathbf{x}_j,

    for the undirected graphs PLNLP passes messages on: given a symmetric
    sparse CSR adjacency it aggregates with :func:`symmetric_mean_spmm`;
    anything else goes through :class:`~torch_geometric.nn.SAGEConv`.
    Takes :class:`SAGEConv`'s arguments.
    """

    def message_and_aggregate(self, adj_t: Tensor, x: tuple[Tensor, Tensor]) -> Tensor:
        if self.aggr == "mean" and isinstance(adj_t, Tensor) and adj_t.layout == torch.sparse_csr:
            return symmetric_mean_spmm(adj_t, x[0])
        return super().message_and_aggregate(adj_t, x)
