"""HeaRT's hard negatives: the heuristics' best candidates come first, no
negative is a known edge or an endpoint, and the same seed gives the same
negatives whatever the chunking."""
import networkx as nx
import numpy as np
import pytest
import torch

from plnlp_core.scoring.hard_negatives import (
    _Graph,
    _pagerank,
    hard_negative_pairs,
    hard_negatives,
    split_hard_negatives,
)
from plnlp_core.scoring.heuristics import adjacency


def random_graph(num_nodes: int, num_edges: int, seed: int) -> torch.Tensor:
    return torch.tensor(list(nx.gnm_random_graph(num_nodes, num_edges, seed=seed).edges()))


def split(edges: torch.Tensor, parts: int = 3) -> list[torch.Tensor]:
    order = torch.randperm(len(edges), generator=torch.Generator().manual_seed(0))
    return list(edges[order].chunk(parts))


def test_a_node_both_heuristics_put_first_is_the_first_negative_for_every_seed():
    # 0's neighbours 1, 2, 3 all reach 4; 5 shares only 1 with 0, 6 and 7 are further out
    edges = torch.tensor([[0, 1], [0, 2], [0, 3], [1, 4], [2, 4], [3, 4], [1, 5], [5, 6], [6, 7]])
    pos = torch.tensor([[0, 3]])
    for seed in range(5):
        negatives = hard_negatives(edges, 8, pos, num_negatives=4, seed=seed)
        assert negatives[0, 0] == 4


def test_resource_allocation_prefers_a_common_neighbour_of_low_degree():
    # 0 and 2 share neighbour 1 (degree 2); 0 and 4 share hub 3 (degree 6): RA 1/2 against 1/6
    edges = torch.tensor([[0, 1], [1, 2], [0, 3], [3, 4], [3, 5], [3, 6], [3, 7], [3, 8]])
    negatives = hard_negatives(edges, 9, torch.tensor([[0, 5]]), num_negatives=2, ppr_steps=2)
    assert negatives[0, 0] == 2


def test_feature_similarity_brings_an_unreachable_twin_among_the_negatives():
    # a 4-cycle 0-1-2-3 with 7 and 8 hanging off it, and 4-5-6 apart
    edges = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 0], [2, 7], [3, 8], [4, 5], [5, 6]])
    x = torch.eye(9)
    x[6] = x[0]  # 6, which no walk from 0 reaches, looks like 0
    pos = torch.tensor([[0, 1]])
    # RA and PPR rank 2 first and 6 last, similarity 6 first: the minimum ties them
    firsts = {int(hard_negatives(edges, 9, pos, num_negatives=2, x=x, seed=s)[0, 0])
              for s in range(10)}
    assert firsts == {2, 6}
    without = {int(hard_negatives(edges, 9, pos, num_negatives=2, seed=s)[0, 0]) for s in range(10)}
    assert without == {2}


def test_no_negative_is_a_known_edge_or_an_endpoint():
    edges = random_graph(60, 400, seed=1)
    train, valid, test = split(edges)
    negatives = hard_negatives(train, 60, valid, num_negatives=20, exclude=test, seed=3)
    pairs = hard_negative_pairs(valid, negatives).view(-1, 2)
    known = {tuple(sorted(e)) for e in edges.tolist()}
    assert not any(tuple(sorted(p)) in known for p in pairs.tolist())
    assert (pairs[:, 0] != pairs[:, 1]).all()
    ends = valid.repeat_interleave(20, dim=0)
    assert ((pairs[:, 0] == ends[:, 0]) | (pairs[:, 1] == ends[:, 1])).all()


def test_shapes_and_which_endpoint_is_replaced():
    edges = random_graph(50, 200, seed=2)
    train, valid, _ = split(edges)
    negatives = hard_negatives(train, 50, valid, num_negatives=10)
    assert negatives.shape == (len(valid), 10) and negatives.dtype == torch.long
    pairs = hard_negative_pairs(valid, negatives)
    assert pairs.shape == (len(valid), 10, 2)
    assert (pairs[:, :5, 0] == valid[:, :1]).all() and (pairs[:, :5, 1] == negatives[:, :5]).all()
    assert (pairs[:, 5:, 1] == valid[:, 1:]).all() and (pairs[:, 5:, 0] == negatives[:, 5:]).all()


def test_the_same_seed_gives_the_same_negatives_whatever_the_chunking():
    edges = random_graph(80, 300, seed=4)
    train, valid, _ = split(edges)
    first = hard_negatives(train, 80, valid, num_negatives=30, seed=7)
    again = hard_negatives(train, 80, valid, num_negatives=30, seed=7, batch_size=3)
    other = hard_negatives(train, 80, valid, num_negatives=30, seed=8)
    assert torch.equal(first, again)
    assert not torch.equal(first, other)  # ties and unscored candidates are ordered by the seed


def test_each_anchor_has_distinct_negatives_while_it_has_enough_candidates():
    edges = random_graph(100, 300, seed=5)
    train, valid, _ = split(edges)
    negatives = hard_negatives(train, 100, valid, num_negatives=40)
    for half in (negatives[:, :20], negatives[:, 20:]):
        assert all(len(set(row)) == 20 for row in half.tolist())


def test_anchors_no_heuristic_reaches_draw_their_negatives_in_different_orders():
    edges = torch.tensor([[0, 1]])  # 2 and 3 have no edge: every candidate scores 0
    for seed in range(5):
        negatives = hard_negatives(edges, 40, torch.tensor([[2, 3]]), num_negatives=10, seed=seed)
        assert negatives[0, :5].tolist() != negatives[0, 5:].tolist()


def test_an_anchor_with_few_candidates_repeats_them():
    edges = torch.tensor([[0, 1], [1, 2], [2, 3]])
    negatives = hard_negatives(edges, 4, torch.tensor([[0, 1]]), num_negatives=6)
    assert negatives[0, :3].tolist() == [2, 3, 2]  # 0's candidates, 2 nearer than 3
    assert negatives[0, 3:].tolist() == [3, 3, 3]  # 1's only candidate


def test_refusals():
    edges = torch.tensor([[0, 1], [1, 2], [0, 2]])
    with pytest.raises(ValueError, match="even"):
        hard_negatives(edges, 4, torch.tensor([[0, 3]]), num_negatives=5)
    with pytest.raises(ValueError, match="node 0 has a known edge with every other node"):
        hard_negatives(edges, 3, torch.tensor([[0, 1]]), num_negatives=2)


def test_pagerank_converges_to_the_closed_form():
    edges = random_graph(30, 90, seed=6)
    adj = adjacency(edges, 30)
    graph = _Graph(adj, adj, None)
    anchors = torch.tensor([0, 7, 29])
    walk = np.diag(1 / np.maximum(adj.sum(axis=1), 1)) @ adj.toarray()
    exact = 0.15 * np.linalg.inv(np.eye(30) - 0.85 * walk)
    np.testing.assert_allclose(_pagerank(graph, anchors, 0.15, 200).numpy(), exact[[0, 7, 29]],
                               atol=1e-5)


def test_a_split_s_negatives_are_those_of_both_parts_at_once(ddi_standin_split):
    split = ddi_standin_split
    parts = split_hard_negatives(split, num_negatives=8, seed=3)
    both = hard_negatives(split.train_pos, split.num_nodes,
                          torch.cat([split.valid_pos, split.test_pos]), 8, seed=3)
    assert torch.equal(torch.cat([parts["valid"], parts["test"]]), both)
    known = {tuple(e) for e in torch.cat([split.train_pos, split.valid_pos,
                                          split.test_pos]).tolist()}
    pairs = hard_negative_pairs(split.test_pos, parts["test"]).view(-1, 2).tolist()
    assert not any((a, b) in known or (b, a) in known for a, b in pairs)
