import torch
from torch_geometric.nn import SAGEConv

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.mean_aggregation import SymmetricSAGEConv, symmetric_mean_spmm


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
