"""Paths of length 3 read from the square of the adjacency: the counts of
the membership tests, on a graph and on a graph less some of its edges;
the kept counts of every edge; training's counts on the input graph."""
import pytest
import torch

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup, path3_counts
from plnlp_core.nn.edge_level.edge_predictor import EdgeLevelPredictor
from tests.core.test_common_neighbors import dense, random_graph, some_pairs


def walked(lookup: AdjacencyLookup, pairs: torch.Tensor) -> torch.Tensor:
    """The counts by membership tests alone, on a lookup made anew."""
    anew = AdjacencyLookup(lookup.adj)
    anew._squared_fits = False
    assert anew.squared() is None
    return path3_counts(anew, pairs)


def paths(a: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """The paths i-k-m-j of the dense adjacency ``a`` with k != j and m != i,
    one pair at a time: the sum of ``a[i, k] * a[k, m] * a[m, j]`` over
    those k and m, as a row of ``a`` less column j, times ``a``, times a
    column of ``a`` less row i."""
    counts = []
    for i, j in pairs.tolist():
        first, last = a[i].clone(), a[:, j].clone()
        first[j], last[i] = 0, 0
        counts.append(float(first @ a @ last))
    return torch.tensor(counts)


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 15, 40), (1, 40, 300), (2, 60, 150)])
def test_the_table_counts_the_paths_of_a_graph_and_of_a_graph_less_some_edges(
        seed, num_nodes, num_edges):
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, num_nodes, seed)
    assert lookup.squared() is not None
    assert torch.equal(path3_counts(lookup, pairs), walked(lookup, pairs))
    reduced = lookup.without(pairs[: num_edges // 3])
    assert reduced.squared() is not lookup.squared()  # its own table
    assert torch.equal(path3_counts(reduced, pairs), walked(reduced, pairs))


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 15, 40), (1, 40, 300), (2, 60, 150)])
def test_the_kept_counts_of_every_edge_are_those_counted_pair_by_pair(seed, num_nodes, num_edges):
    """Training's pairs that are edges read the graph's counts of every
    edge (both directions); the others are counted as before."""
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    lookup = AdjacencyLookup(adj)
    pairs = torch.cat([some_pairs(edges, num_nodes, seed), edges.flip(1)])
    non_edges = pairs[~lookup.contains(pairs[:, 0], pairs[:, 1])]
    assert torch.equal(path3_counts(lookup, non_edges, edges_kept=True), walked(lookup, non_edges))
    assert lookup._edge_path3 is None  # no edge asked for: not counted for every edge
    kept = path3_counts(lookup, pairs, edges_kept=True)
    assert lookup.edge_path3_counts().numel() == 2 * edges.size(0)
    assert torch.equal(kept, walked(lookup, pairs))
    assert torch.equal(kept, path3_counts(lookup, pairs))
    torch.testing.assert_close(kept, paths(dense(edges, num_nodes), pairs))


def test_a_training_pair_counts_its_paths_on_the_input_graph_less_its_own_edge_alone():
    """The edge level's training groups remove their positives; a pair's
    paths of length 3 are still those of the input graph less the pair's
    own edge (as SEAL removes a training link from its subgraph), not those
    of the group's graph."""
    torch.manual_seed(0)
    edges = random_graph(30, 120, 5)
    adj, _ = build_adjacency(edges, 30)
    predictor = EdgeLevelPredictor(8, 8, 2, path_length=3)
    lookup = AdjacencyLookup(adj)
    positives = edges[:40]
    reduced = lookup.without(positives)
    pairs = torch.cat([positives, some_pairs(edges, 30, 5)])
    common = torch.zeros(pairs.size(0))
    a = dense(edges, 30)
    for training in (True, False):
        predictor.train(training)
        counts = predictor.counts(reduced, pairs, common)[:, 1]
        torch.testing.assert_close(counts, torch.log1p(paths(a, pairs)))
    less = a - dense(positives, 30)
    assert not torch.equal(paths(less, pairs), paths(a, pairs))  # the group's graph differs


def test_a_graph_whose_tables_exceed_their_share_of_memory_counts_by_tests(monkeypatch):
    monkeypatch.setattr("plnlp_core.nn.edge_level.common_neighbors.TABLE_MEMORY_SHARE", 0.0)
    edges = random_graph(30, 120, 4)
    adj, _ = build_adjacency(edges, 30)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 30, 4)
    assert lookup.squared() is None and lookup.without(edges[:10]).squared() is None
    torch.testing.assert_close(path3_counts(lookup, pairs), paths(dense(edges, 30), pairs))
