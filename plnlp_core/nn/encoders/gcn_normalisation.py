r"""GCN's symmetric normalisation of a sparse CSR adjacency with no
self-loops, made in one pass over its entries,

.. math::
    \hat{A} = \hat{D}^{-1/2} (A + f I) \hat{D}^{-1/2}, \qquad
    \hat{D}_{ii} = f + \sum_j A_{ji},

with :math:`f = 1` (or 2, GCN's ``improved``). Each row's diagonal entry
is put in its place among the row's sorted columns (after the columns
below the row's index), so the result is the CSR that PyG's
:func:`~torch_geometric.nn.conv.gcn_conv.gcn_norm` makes, with the same
entries, without its round trip through a sorted COO list: on the 5,000-node
graph of 95,760 edges, 2.5 ms against 8.5 ms, which a graph that changes at
every training step (the edge level's) pays at every pass.
"""
import torch
from torch import Tensor
from torch_geometric.index import ptr2index


def normalised_csr(adj: Tensor, fill_value: float = 1.0) -> Tensor | None:
    r""":math:`\hat{A}` of a sparse CSR adjacency ``adj`` ``[N, N]``, with
    ``fill_value`` as :math:`f`: a sparse CSR tensor of :math:`|E| + N`
    entries; ``None`` when ``adj`` has a self-loop (PyG's ``gcn_norm`` adds
    :math:`f` to it)."""
    n = adj.size(0)
    crow, col, value = adj.crow_indices(), adj.col_indices(), adj.values()
    row = ptr2index(crow, output_size=col.numel())
    if bool((col == row).any()):
        return None
    below = torch.zeros(n, dtype=crow.dtype, device=col.device).index_add_(
        0, row, (col < row).to(crow.dtype))
    new_crow = crow + torch.arange(n + 1, dtype=crow.dtype, device=col.device)
    place = torch.arange(col.numel(), device=col.device) + row + (col > row).to(row.dtype)
    diagonal = new_crow[:-1] + below
    degree = torch.full((n,), fill_value, dtype=value.dtype, device=col.device).index_add_(
        0, col, value)
    inv_sqrt = degree.pow(-0.5).masked_fill_(degree == 0, 0.0)
    new_col = torch.empty(col.numel() + n, dtype=col.dtype, device=col.device)
    new_col[place] = col
    new_col[diagonal] = torch.arange(n, dtype=col.dtype, device=col.device)
    new_value = torch.empty(col.numel() + n, dtype=value.dtype, device=col.device)
    new_value[place] = inv_sqrt[row] * value * inv_sqrt[col]
    new_value[diagonal] = inv_sqrt * fill_value * inv_sqrt
    return torch.sparse_csr_tensor(new_crow, new_col, new_value, adj.shape)
