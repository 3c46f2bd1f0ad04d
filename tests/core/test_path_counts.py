"""Paths of length 3 read from the square of the adjacency: the counts of
the membership tests, on a graph and on graphs less some of its edges."""
import pytest
import torch

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup, path3_counts
from tests.core.test_common_neighbors import dense, random_graph, some_pairs


def walked(lookup: AdjacencyLookup, pairs: torch.Tensor) -> torch.Tensor:
    """The counts by membership tests alone, on a lookup made anew."""
    anew = AdjacencyLookup(lookup.adj)
    anew._squared_fits = False
    assert anew.squared() is None
    return path3_counts(anew, pairs)


def paths(a: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """The simple paths i-k-m-j of the dense adjacency ``a``, one at a time."""
    return torch.tensor([float(sum(a[i, k] * a[k, m] * a[m, j] for k in range(a.size(0))
                                   for m in range(a.size(0)) if k != j and m != i))
                         for i, j in pairs.tolist()])


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 15, 40), (1, 40, 300), (2, 60, 150)])
def test_the_table_counts_the_paths_of_a_graph_and_of_it_less_a_steps_edges(
        seed, num_nodes, num_edges):
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, num_nodes, seed)
    assert lookup.squared() is not None
    assert torch.equal(path3_counts(lookup, pairs), walked(lookup, pairs))
    reduced = lookup.without(pairs[: num_edges // 3])
    assert reduced.squared() is lookup.squared()  # the input graph's table, less the removed
    assert torch.equal(path3_counts(reduced, pairs), walked(reduced, pairs))
    again = reduced.without(pairs[num_edges // 3: num_edges // 2])  # less more edges
    assert torch.equal(path3_counts(again, pairs), walked(again, pairs))
    assert not lookup.squared().corrections.any()  # every correction taken away again
    assert torch.equal(path3_counts(lookup, pairs), walked(lookup, pairs))


def test_the_table_agrees_with_paths_counted_one_at_a_time():
    edges = random_graph(12, 30, 3)
    adj, _ = build_adjacency(edges, 12)
    lookup = AdjacencyLookup(adj).without(edges[:6])
    pairs = some_pairs(edges, 12, 3)
    a = dense(edges, 12) - dense(edges[:6], 12)
    torch.testing.assert_close(path3_counts(lookup, pairs), paths(a, pairs))


def test_a_graph_whose_tables_exceed_their_share_of_memory_counts_by_tests(monkeypatch):
    monkeypatch.setattr("plnlp_core.nn.edge_level.common_neighbors.TABLE_MEMORY_SHARE", 0.0)
    edges = random_graph(30, 120, 4)
    adj, _ = build_adjacency(edges, 30)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 30, 4)
    assert lookup.squared() is None and lookup.without(edges[:10]).squared() is None
    torch.testing.assert_close(path3_counts(lookup, pairs), paths(dense(edges, 30), pairs))
