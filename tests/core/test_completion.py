"""NCNC's completion: the one-sided neighbours of a pair, their weights from
the links' scores, and the predictor's sum with them, against dense
arithmetic."""
import pytest
import torch

from plnlp_core.graph import build_adjacency
from plnlp_core.nn import NCNPredictor
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup
from plnlp_core.nn.edge_level.completion import Completion, one_sided_neighbours
from tests.core.test_common_neighbors import dense, random_graph, some_pairs

NUM_NODES = 30


@pytest.fixture
def graph():
    edges = random_graph(NUM_NODES, 70, 5)
    adj, _ = build_adjacency(edges, NUM_NODES)
    return dense(edges, NUM_NODES), AdjacencyLookup(adj), some_pairs(edges, NUM_NODES, 5)


def as_sets(owner: torch.Tensor, node: torch.Tensor, count: int) -> list[set[int]]:
    sets = [set() for _ in range(count)]
    for o, k in zip(owner.tolist(), node.tolist(), strict=True):
        sets[o].add(k)
    return sets


def test_one_sided_neighbours_are_those_of_i_neither_j_nor_js(graph):
    a, lookup, pairs = graph
    owner, node = one_sided_neighbours(lookup.crow, lookup.col, lookup.contains, pairs, 1000,
                                       drawn=False)
    for (i, j), got in zip(pairs.tolist(), as_sets(owner, node, len(pairs)), strict=True):
        expected = {k for k in range(NUM_NODES) if a[i, k] and not a[j, k] and k != j}
        assert got == expected


def test_at_most_the_limit_are_kept_and_a_draw_keeps_a_subset(graph):
    _, lookup, pairs = graph
    args = (lookup.crow, lookup.col, lookup.contains, pairs)
    full = as_sets(*one_sided_neighbours(*args, 1000, drawn=False), len(pairs))
    capped = as_sets(*one_sided_neighbours(*args, 2, drawn=False), len(pairs))
    torch.manual_seed(0)
    drawn = as_sets(*one_sided_neighbours(*args, 2, drawn=True), len(pairs))
    assert all(len(c) <= 2 and c <= f for c, f in zip(capped, full, strict=True))
    assert all(d <= f for d, f in zip(drawn, full, strict=True))
    assert sum(map(len, drawn)) < sum(map(len, full))


def test_the_weight_is_alpha_pi_p_over_pi_p_plus_one_minus_p():
    completion = Completion(scale=2.0, offset=1.0, threshold=0.5, alpha=0.4)
    scores = torch.tensor([-3.0, 1.0, 6.0])
    p = torch.sigmoid(2.0 * (scores - 1.0))
    torch.testing.assert_close(completion.weight(scores), 0.4 * 0.5 * p / (0.5 * p + 1 - p))
    assert completion.weight(torch.tensor([1.0])).item() == pytest.approx(0.4 / 3)


def test_the_predictor_adds_each_one_sided_neighbour_weighted_by_its_links_score(graph):
    a, lookup, pairs = graph
    torch.manual_seed(0)
    completion = Completion(scale=1.5, offset=0.2, threshold=0.6, alpha=0.8)
    completed = NCNPredictor(8, 16, xlin=True, completion=completion).eval()
    plain = NCNPredictor(8, 16, xlin=True).eval()
    plain.load_state_dict(completed.state_dict())
    h = torch.randn(NUM_NODES, 8)
    with torch.no_grad():
        x = h + completed.xlin(h)
        rows = []
        for i, j in pairs.tolist():
            row = (a[i] * a[j]) @ x
            for near, far in ((i, j), (j, i)):
                for k in range(NUM_NODES):
                    if a[near, k] and not a[far, k] and k != far:
                        score = plain(h, torch.tensor([[far, k]]), lookup)
                        row = row + completion.weight(score) * x[k]
            rows.append(row)
        common = torch.stack(rows)
        expected = completed.lin(completed.beta * completed.cn(common)
                                 + completed.ij(h[pairs[:, 0]] * h[pairs[:, 1]])).squeeze(-1)
        torch.testing.assert_close(completed(h, pairs, lookup), expected)
        assert not torch.allclose(plain(h, pairs, lookup), expected)


def test_completed_neighbours_pass_gradients_to_their_vectors(graph):
    _, lookup, pairs = graph
    torch.manual_seed(1)
    completion = Completion(scale=1.0, offset=0.0, threshold=0.75, alpha=1.0)
    predictor = NCNPredictor(8, 16, completion=completion).train()
    h = torch.randn(NUM_NODES, 8, requires_grad=True)
    predictor(h, pairs, lookup).sum().backward()
    assert h.grad is not None and h.grad.abs().sum() > 0
    assert "completion=Completion(scale=1.0" in repr(predictor)
