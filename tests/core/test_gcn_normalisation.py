"""GCN's normalisation of a CSR graph in one pass: the CSR PyG's gcn_norm
makes, and an uncached GCN layer's output, on graphs with isolated nodes,
with GCN's ``improved`` fill, and with self-loops (PyG's own path)."""
import pytest
import torch
from torch_geometric.nn import GCNConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.encoders.gcn_normalisation import normalised_csr
from plnlp_core.nn.encoders.pyg_layers import CachedGCNConv
from tests.core.test_common_neighbors import random_graph


def pyg_normalised(adj: torch.Tensor, improved: bool) -> torch.Tensor:
    normalised, _ = gcn_norm(adj, None, adj.size(0), improved, True, "source_to_target",
                             adj.values().dtype)
    return normalised


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 12, 20), (1, 50, 300), (2, 80, 60)])
@pytest.mark.parametrize("improved", [False, True])
def test_the_csr_is_the_one_pyg_makes(seed, num_nodes, num_edges, improved):
    """Two isolated nodes at the end: each gets its self-loop alone."""
    adj, _ = build_adjacency(random_graph(num_nodes, num_edges, seed), num_nodes + 2)
    assert bool((adj.crow_indices().diff()[-2:] == 0).all())
    ours = normalised_csr(adj, 2.0 if improved else 1.0)
    assert ours is not None  # no self-loops
    theirs = pyg_normalised(adj, improved)
    assert torch.equal(ours.crow_indices(), theirs.crow_indices())
    assert torch.equal(ours.col_indices(), theirs.col_indices())
    torch.testing.assert_close(ours.values(), theirs.values())


@pytest.mark.parametrize("with_loops", [False, True])
def test_an_uncached_layer_gives_pygs_output(with_loops):
    torch.manual_seed(0)
    edges = random_graph(40, 150, 3)
    if with_loops:
        edges = torch.cat([edges, torch.tensor([[4, 4], [7, 7]])])
    adj, _ = build_adjacency(edges, 40)
    assert (normalised_csr(adj) is None) == with_loops  # PyG's own with self-loops
    ours = CachedGCNConv(8, 6)
    ours.cached = False
    theirs = GCNConv(8, 6)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(40, 8)
    torch.testing.assert_close(ours(x, adj), theirs(x, adj))
