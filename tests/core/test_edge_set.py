"""EdgeSet: membership of node pairs among the training edges."""
import pytest
import torch

from plnlp_core.edge_set import EdgeSet
from plnlp_core.graph import build_adjacency

EDGES = torch.tensor([[0, 1], [1, 2], [3, 0]])


@pytest.fixture(autouse=True, params=["dense table", "sorted keys", "csr rows"])
def lookup(request, monkeypatch):
    """Every test runs with each way of answering a query (the CSR's rows
    only for sets built on a CSR)."""
    if request.param != "dense table":
        monkeypatch.setattr(EdgeSet, "DENSE_LIMIT", 0)
    if request.param == "sorted keys":
        monkeypatch.setattr(EdgeSet, "COPY_LIMIT", 2**62)
    if request.param == "csr rows":
        monkeypatch.setattr(EdgeSet, "COPY_LIMIT", 0)
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


def test_a_set_on_a_csr_answers_as_the_set_of_its_edges(lookup):
    """Rows of every degree (none, one, the most), the first and the last
    node, pairs past a row's largest column and before its smallest."""
    generator = torch.Generator().manual_seed(0)
    n = 300
    edges = torch.cat([torch.randint(n - 2, (900, 2), generator=generator),
                       torch.tensor([[0, 5], [n - 1, 7]]),  # node n - 2 has no edge
                       torch.stack([torch.full((60,), 9), torch.arange(60)], 1)])
    n += 3  # three nodes without edges last
    adj, _ = build_adjacency(edges, n)
    on_csr, of_edges = EdgeSet.from_csr(adj, undirected=True), EdgeSet(edges, n, undirected=True)
    assert (on_csr.table is not None) == (lookup == "dense table")
    assert (on_csr.rows is not None) == (lookup == "csr rows")
    nodes = torch.arange(n)
    query = torch.cat([torch.randint(n, (5000, 2), generator=generator), edges, edges.flip(1),
                       torch.stack([nodes, torch.full((n,), n - 1)], 1),
                       torch.stack([nodes, torch.zeros(n, dtype=torch.long)], 1)])
    assert torch.equal(on_csr.contains(query), of_edges.contains(query))
    keys = (query[:, 0] * n + query[:, 1]).view(-1, 10)  # a sampler's rows of candidates
    assert torch.equal(on_csr.contains_keys(keys), of_edges.contains_keys(keys))
    assert len(on_csr) == len(of_edges)
    assert all(torch.equal(a, b) for a, b in zip(on_csr.endpoints(), of_edges.endpoints(),
                                                 strict=True))


def test_a_set_on_an_empty_csr_contains_nothing():
    adj, _ = build_adjacency(torch.empty(0, 2, dtype=torch.long), 4)
    assert not EdgeSet.from_csr(adj, undirected=True).contains(torch.tensor([[0, 1]])).any()


def test_a_deferred_table_is_made_once_at_its_first_read_and_queries_search_keys_before(lookup):
    """Past the dense limit the set has no table to make."""
    edges = torch.tensor([[0, 1], [1, 2], [3, 4]])
    full = EdgeSet(edges, 6, undirected=True)
    made = []

    def make() -> torch.Tensor:
        made.append(1)
        return full.table.clone()

    deferred = EdgeSet.from_sorted_keys(full.keys, 6, undirected=True, table=make)
    queries = torch.tensor([[1, 0], [2, 1], [0, 2], [4, 3], [5, 5]])
    assert deferred.contains(queries).tolist() == [True, True, False, True, False]
    assert not made and not deferred.table_made
    if lookup != "dense table":
        assert not deferred.dense and deferred.table is None and not made
        return
    assert deferred.dense
    assert torch.equal(deferred.table, full.table) and deferred.table_made
    assert torch.equal(deferred.table, full.table) and made == [1]
    assert deferred.contains(queries).tolist() == [True, True, False, True, False]
