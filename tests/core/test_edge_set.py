"""EdgeSet: membership of node pairs among the training edges."""
import pytest
import torch

from plnlp_core.edge_set import EdgeSet

EDGES = torch.tensor([[0, 1], [1, 2], [3, 0]])


@pytest.fixture(autouse=True, params=["dense table", "sorted keys"])
def lookup(request, monkeypatch):
    """Every test runs with both ways of answering a query."""
    if request.param == "sorted keys":
        monkeypatch.setattr(EdgeSet, "DENSE_LIMIT", 0)
    return request.param


def test_small_graphs_use_the_dense_table_and_large_ones_sorted_keys(lookup):
    edges = EdgeSet(EDGES, num_nodes=4, undirected=True)
    assert (edges.table is not None) == (lookup == "dense table")


def test_undirected_edge_set_contains_both_directions_of_every_edge():
    edges = EdgeSet(EDGES, num_nodes=4, undirected=True)
    query = torch.tensor([[0, 1], [1, 0], [1, 2], [2, 1], [3, 0], [0, 3]])
    assert edges.contains(query).all()
    assert len(edges) == 6


def test_directed_edge_set_contains_only_the_given_direction():
    edges = EdgeSet(EDGES, num_nodes=4, undirected=False)
    assert edges.contains(EDGES).all()
    assert not edges.contains(EDGES.flip(-1)).any()
    assert len(edges) == 3


def test_edge_set_rejects_non_edges_including_keys_past_the_largest():
    edges = EdgeSet(EDGES, num_nodes=4, undirected=True)
    query = torch.tensor([[0, 2], [2, 0], [3, 3], [0, 0], [2, 3], [3, 2]])
    assert not edges.contains(query).any()


def test_empty_edge_set_contains_nothing():
    edges = EdgeSet(torch.empty(0, 2, dtype=torch.long), num_nodes=4, undirected=True)
    assert len(edges) == 0
    assert edges.contains(torch.tensor([[0, 1], [2, 3]])).tolist() == [False, False]


def test_edge_set_counts_duplicate_edges_once():
    edges = EdgeSet(torch.tensor([[0, 1], [1, 0], [0, 1]]), num_nodes=3, undirected=True)
    assert len(edges) == 2
