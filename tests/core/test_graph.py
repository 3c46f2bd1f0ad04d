"""The training graph's adjacency: the CSR PyG's utilities give, built leaner."""
import pytest
import torch
from torch_geometric.utils import degree, to_torch_csr_tensor, to_undirected

from plnlp_core.graph import build_adjacency, csr_of_pairs


def pyg_csr(edges: torch.Tensor, num_nodes: int, both_ways: bool) -> torch.Tensor:
    edge_index = edges.t()
    edge_index = to_undirected(edge_index, num_nodes=num_nodes) if both_ways else \
        torch.unique(edge_index, dim=1)
    return to_torch_csr_tensor(edge_index, size=(num_nodes, num_nodes))


@pytest.mark.parametrize("both_ways", [True, False])
def test_pairs_with_repeats_reverses_and_self_loops_give_pygs_csr(both_ways):
    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(40, (300, 2), generator=generator)
    edges = torch.cat([edges, edges[:20], edges[20:30].flip(1), torch.tensor([[3, 3]])])
    ours, theirs = csr_of_pairs(edges, 45, both_ways), pyg_csr(edges, 45, both_ways)
    assert torch.equal(ours.crow_indices(), theirs.crow_indices())
    assert torch.equal(ours.col_indices(), theirs.col_indices())
    assert torch.equal(ours.values(), theirs.values())


def test_the_degrees_are_pygs():
    edges = torch.randint(30, (200, 2), generator=torch.Generator().manual_seed(1))
    _, ours = build_adjacency(edges, 33)
    expected = degree(to_undirected(edges.t(), num_nodes=33)[0], 33)
    assert ours.dtype == expected.dtype and torch.equal(ours, expected)
