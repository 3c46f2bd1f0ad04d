import torch
from torch_geometric.nn import SAGEConv

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.encoders import mean_aggregation
from plnlp_core.nn.encoders.mean_aggregation import (
    SymmetricSAGEConv,
    dense_pays_off,
    symmetric_mean_spmm,
)


def random_adjacency(num_nodes: int = 30, num_edges: int = 80):
    gen = torch.Generator().manual_seed(0)
    edges = torch.randint(num_nodes - 1, (num_edges, 2), generator=gen)  # last node isolated
    return build_adjacency(edges[edges[:, 0] != edges[:, 1]], num_nodes)[0]


def test_symmetric_mean_spmm_matches_the_dense_mean_and_its_gradient():
    adj = random_adjacency()
    dense = adj.to_dense()
    x = torch.randn(30, 5, requires_grad=True)
    y = symmetric_mean_spmm(adj, x)
    expected = dense @ x / dense.sum(1, keepdim=True).clamp(min=1)
    torch.testing.assert_close(y, expected)
    assert torch.all(y[-1] == 0)  # no neighbours, zero message
    weights = torch.randn(30, 5)
    (grad,) = torch.autograd.grad((y * weights).sum(), x)
    (grad_expected,) = torch.autograd.grad((expected * weights).sum(), x)
    torch.testing.assert_close(grad, grad_expected)


def test_symmetric_sage_equals_pyg_sage_forward_and_backward():
    adj = random_adjacency()
    ours, theirs = SymmetricSAGEConv(5, 4), SAGEConv(5, 4)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(30, 5, requires_grad=True)
    y_ours, y_theirs = ours(x, adj), theirs(x, adj)
    torch.testing.assert_close(y_ours, y_theirs)
    (g_ours,) = torch.autograd.grad(y_ours.square().sum(), x)
    (g_theirs,) = torch.autograd.grad(y_theirs.square().sum(), x)
    torch.testing.assert_close(g_ours, g_theirs)


def test_symmetric_sage_falls_back_to_pyg_for_an_edge_index():
    conv = SymmetricSAGEConv(5, 4)
    edge_index = torch.tensor([[0, 1], [1, 0]])
    assert conv(torch.randn(3, 5), edge_index).shape == (3, 4)


def test_dense_aggregation_pays_off_on_a_dense_graph_on_a_gpu_only():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    ddi_nodes, ddi_nnz = 4267, 2_135_822  # 11.7 % of N²
    assert dense_pays_off(ddi_nodes, ddi_nnz, cuda)
    assert not dense_pays_off(ddi_nodes, ddi_nnz, cpu)
    assert not dense_pays_off(ddi_nodes, ddi_nodes * 10, cuda)  # sparse
    assert not dense_pays_off(100_000, 100_000**2 // 4, cuda)  # too large to copy


def test_dense_aggregation_equals_the_sparse_one_and_is_made_once(monkeypatch):
    adj = random_adjacency()
    sparse_conv = SymmetricSAGEConv(5, 4)
    dense_conv = SymmetricSAGEConv(5, 4)
    dense_conv.load_state_dict(sparse_conv.state_dict())
    x = torch.randn(30, 5, requires_grad=True)
    y_sparse = sparse_conv(x, adj)
    monkeypatch.setattr(mean_aggregation, "dense_pays_off", lambda *args: True)
    made = []
    to_dense = torch.Tensor.to_dense
    monkeypatch.setattr(torch.Tensor, "to_dense", lambda t, *a, **k: made.append(t) or to_dense(t))
    y_dense = dense_conv(x, adj)
    torch.testing.assert_close(y_dense, y_sparse)
    (g_sparse,) = torch.autograd.grad(y_sparse.square().sum(), x)
    (g_dense,) = torch.autograd.grad(y_dense.square().sum(), x)
    torch.testing.assert_close(g_dense, g_sparse)
    dense_conv(x, adj)
    assert len(made) == 1  # the same adjacency again: the cached copy
    dense_conv(x, random_adjacency(num_edges=60))
    assert len(made) == 2  # another adjacency: a new copy
    dense_conv.cached = False
    dense_conv(x, adj), dense_conv(x, adj)
    assert len(made) == 4


def test_dense_aggregation_runs_in_bfloat16_under_autocast(monkeypatch):
    monkeypatch.setattr(mean_aggregation, "dense_pays_off", lambda *args: True)
    conv = SymmetricSAGEConv(5, 4)
    adj, x = random_adjacency(), torch.randn(30, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        aggregated = conv.message_and_aggregate(adj, (x, x))
    assert aggregated.dtype == torch.float32  # bfloat16 product, fp32 inverse degrees
    expected = symmetric_mean_spmm(adj, x)
    torch.testing.assert_close(aggregated, expected, atol=0.02, rtol=0.02)
