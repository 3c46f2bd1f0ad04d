"""Negative samplers (global, local) never return a training edge or a
self-loop, and the local sampler keeps the anchor."""
import itertools

import pytest
import torch

from plnlp_core.assembly import build_negative_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.sampling import SAMPLERS, GlobalSampler, LocalSampler

NUM_NODES = 8


def dense_graph() -> torch.Tensor:
    """8 nodes, every pair an edge except the 6 pairs listed below (so
    22 of 28 pairs are edges); each node has at least one non-edge."""
    missing = {(0, 1), (2, 3), (4, 5), (6, 7), (0, 7), (3, 4)}
    pairs = [p for p in itertools.combinations(range(NUM_NODES), 2) if p not in missing]
    return torch.tensor(pairs)


def edge_pairs(edges: torch.Tensor) -> set[tuple[int, int]]:
    return {(u, v) for u, v in edges.tolist()} | {(v, u) for u, v in edges.tolist()}


@pytest.fixture(autouse=True, params=["edge keys", "csr rows"])
def csr_rows(request, monkeypatch) -> bool:
    """Every test runs with the known edges as a key array of their own
    and as the rows of the training CSR, searched in place."""
    if request.param == "csr rows":
        monkeypatch.setattr(EdgeSet, "DENSE_LIMIT", 0)
        monkeypatch.setattr(EdgeSet, "COPY_LIMIT", 0)
    return request.param == "csr rows"


def make_sampler(name: str, edges: torch.Tensor, degree_power: float = 0.0):
    adj, degree = build_adjacency(edges, NUM_NODES)
    edge_set = EdgeSet.from_csr(adj, undirected=True) if EdgeSet.COPY_LIMIT == 0 else \
        EdgeSet(edges, NUM_NODES, undirected=True)
    settings = PLNLPConfig(degree_power=degree_power)
    return build_negative_sampler(settings.replace(sampler=name), edge_set, degree)


def positives_of(edges: torch.Tensor, repeats: int) -> torch.Tensor:
    both = torch.cat([edges, edges.flip(-1)])
    return both.repeat(repeats, 1)


@pytest.mark.parametrize(("name", "degree_power"), [
    ("global", 0.0), ("local", 0.0), ("local", 0.75), ("local", -0.5),
])
def test_sampler_never_returns_a_training_edge_in_either_direction_or_a_self_loop(
        name, degree_power):
    edges = dense_graph()
    sampler = make_sampler(name, edges, degree_power)
    pos = positives_of(edges, 50)
    neg = sampler(pos, torch.Generator().manual_seed(0))
    assert neg.shape == pos.shape
    known = edge_pairs(edges)
    drawn = {(u, v) for u, v in neg.tolist()}
    assert not drawn & known
    assert all(u != v for u, v in drawn)


@pytest.mark.parametrize("degree_power", [0.0, 0.75, -0.5])
def test_local_sampler_keeps_the_anchor_of_each_positive(degree_power):
    edges = dense_graph()
    sampler = make_sampler("local", edges, degree_power)
    pos = positives_of(edges, 10)
    neg = sampler(pos, torch.Generator().manual_seed(1))
    assert torch.equal(neg[:, 0], pos[:, 0])


def test_global_sampler_draws_every_ordered_non_edge_over_many_draws():
    edges = dense_graph()
    sampler = make_sampler("global", edges)
    pos = positives_of(edges, 50)  # 2200 draws over 12 ordered non-edges
    neg = sampler(pos, torch.Generator().manual_seed(2))
    known = edge_pairs(edges)
    non_edges = {(u, v) for u in range(NUM_NODES) for v in range(NUM_NODES)
                 if u != v and (u, v) not in known}
    assert len(non_edges) == 12
    assert {(u, v) for u, v in neg.tolist()} == non_edges


def test_global_sampler_ignores_the_positive_it_is_drawn_for():
    edges = dense_graph()
    sampler = make_sampler("global", edges)
    pos = torch.zeros(2000, 2, dtype=torch.long)  # the same positive (0, 0) everywhere
    pos[:, 1] = 2
    neg = sampler(pos, torch.Generator().manual_seed(3))
    assert set(neg[:, 0].tolist()) == set(range(NUM_NODES))


def test_local_sampler_degree_power_weights_endpoints_by_degree_to_the_power():
    edges = dense_graph()
    sampler = make_sampler("local", edges, 0.5)
    _, degree = build_adjacency(edges, NUM_NODES)
    torch.testing.assert_close(sampler.probs, degree.double().pow(0.5))
    assert make_sampler("local", edges, 0.0).probs is None


def test_local_sampler_positive_degree_power_prefers_high_degree_endpoints():
    # node 9 has degree 5 (to 0..4), node 0 degree 5, nodes 1..8 degree 1
    edges = torch.tensor([[9, 0], [9, 1], [9, 2], [9, 3], [9, 4],
                          [5, 0], [6, 0], [7, 0], [8, 0]])
    num_nodes = 10
    _, degree = build_adjacency(edges, num_nodes)
    edge_set = EdgeSet(edges, num_nodes, undirected=True)
    anchor = torch.tensor([[5, 0]]).repeat(4000, 1)  # anchor 5 may reach 1..4, 6..9
    counts = {}
    for power in (0.0, 2.0):
        sampler = LocalSampler(edge_set, degree, power)
        neg = sampler(anchor, torch.Generator().manual_seed(4))
        counts[power] = int((neg[:, 1] == 9).sum())
    # anchor 5 may end at 1..4, 6..9 (not itself, not its neighbour 0).
    # uniform: node 9 is 1 of 8 candidates, ~500 of 4000 draws;
    # power 2: weight 5^2 = 25 against 7 * 1^2 for the others, 25 / 32 ~ 3125 draws
    assert counts[0.0] < 800
    assert counts[2.0] > 2800


@pytest.mark.parametrize("name", ["global", "local"])
def test_sampler_raises_plnlp_error_when_no_non_edge_exists(name):
    complete = torch.tensor(list(itertools.combinations(range(5), 2)))
    _, degree = build_adjacency(complete, 5)
    with pytest.raises(PLNLPError, match="no non-edge"):
        build_negative_sampler(PLNLPConfig(sampler=name), EdgeSet(complete, 5, undirected=True),
                               degree)


def test_sampler_table_names_every_sampler():
    assert SAMPLERS.get("global") is GlobalSampler
    assert SAMPLERS.get("local") is LocalSampler
    with pytest.raises(PLNLPError, match="adversarial, global, hard, local"):
        SAMPLERS.get("uniform")


@pytest.mark.parametrize("name", ["global", "local"])
def test_rows_whose_proposals_are_all_edges_fall_back_to_a_verified_non_edge(name, monkeypatch):
    edges = dense_graph()
    sampler = make_sampler(name, edges)
    monkeypatch.setattr(type(sampler), "candidates", 1)  # most rows now fall back
    pos = positives_of(edges, 50)
    fallbacks = []
    real = sampler.fallback
    monkeypatch.setattr(sampler, "fallback", lambda p, g: fallbacks.append(1) or real(p, g))
    neg = sampler(pos, torch.Generator().manual_seed(5))
    assert fallbacks
    assert not {(u, v) for u, v in neg.tolist()} & edge_pairs(edges)
    assert all(u != v for u, v in neg.tolist())
    if name == "local":
        assert torch.equal(neg[:, 0], pos[:, 0])


@pytest.mark.parametrize("name", ["global", "local"])
def test_a_draw_proposes_once_and_never_loops_back_to_the_host(name, monkeypatch):
    edges = dense_graph()
    sampler = make_sampler(name, edges)
    calls = []
    real = sampler.propose
    monkeypatch.setattr(sampler, "propose", lambda p, g: calls.append(p.size(0)) or real(p, g))
    pos = positives_of(edges, 10)
    sampler(pos, torch.Generator().manual_seed(6))
    assert calls == [sampler.candidates * pos.size(0)]


def test_denser_graphs_draw_more_candidates_per_row():
    # 2 of 28 pairs are edges: 12 of 64 proposals are rejected (self-loops too),
    # 0.19^6 < 1e-4; with 22 edges 52 of 64 are, and the cap of 32 is reached
    assert make_sampler("global", torch.tensor([[0, 1], [2, 3]])).candidates == 6
    assert make_sampler("global", dense_graph()).candidates == 32
