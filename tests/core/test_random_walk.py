"""Random-walk augmentation (paper §4.5): pairs (start, u_s) with weight 1/s."""
import torch

from plnlp_core.graph import build_adjacency
from plnlp_core.random_walk import chunk_seed, random_walk_pairs, walk_round, walk_starts


def pair_list(pairs: torch.Tensor, weights: torch.Tensor) -> list[tuple[int, int, float]]:
    rows = zip(pairs.tolist(), weights.tolist(), strict=True)
    return sorted((u, v, round(w, 6)) for (u, v), w in rows)


def test_walks_on_one_neighbour_graph_give_exact_pairs_and_weights_one_over_s():
    # edges 0-1 and 2-3 (made undirected), node 4 isolated: every walk is
    # forced. From 0 the walk is 0 -> 1 -> 0 -> 1 -> 0, so s = 1..4 visits
    # 1, 0, 1, 0: pairs (0, 1) with 1/1 and 1/3; the visits of 0 itself drop.
    adj, _ = build_adjacency(torch.tensor([[0, 1], [2, 3]]), 5)
    pairs, weights = random_walk_pairs(adj, torch.arange(5), 4, torch.Generator().manual_seed(0))
    third = round(1 / 3, 6)
    assert pair_list(pairs, weights) == sorted([
        (0, 1, 1.0), (0, 1, third),
        (1, 0, 1.0), (1, 0, third),
        (2, 3, 1.0), (2, 3, third),
        (3, 2, 1.0), (3, 2, third),
    ])


def test_walks_on_a_path_weight_each_visit_by_one_over_its_step():
    # path 0 - 1 - 2 from start 0 with length 2: 0 -> 1 -> (0 or 2).
    adj, _ = build_adjacency(torch.tensor([[0, 1], [1, 2]]), 3)
    pairs, weights = random_walk_pairs(adj, torch.zeros(400, dtype=torch.long), 2,
                                       torch.Generator().manual_seed(0))
    steps = torch.round(1 / weights).long()
    assert torch.equal(pairs[steps == 1], torch.tensor([[0, 1]]).expand(400, 2))
    second = pairs[steps == 2]
    # step 2 returns to 0 (dropped) or reaches 2, each about half the time
    assert torch.equal(second, torch.tensor([[0, 2]]).expand(second.size(0), 2))
    assert 120 < second.size(0) < 280


def test_walks_never_pair_a_node_with_itself():
    edges = torch.tensor([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4]])
    adj, _ = build_adjacency(edges, 5)
    pairs, weights = random_walk_pairs(adj, torch.arange(5).repeat(20), 6,
                                       torch.Generator().manual_seed(0))
    assert pairs.size(0) > 0
    assert (pairs[:, 0] != pairs[:, 1]).all()
    assert set(torch.round(1 / weights).long().tolist()) <= set(range(1, 7))


def test_walks_only_follow_edges():
    edges = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]])
    adj, _ = build_adjacency(edges, 6)
    pairs, weights = random_walk_pairs(adj, torch.arange(6).repeat(10), 1,
                                       torch.Generator().manual_seed(0))
    undirected = {(u, v) for u, v in edges.tolist()} | {(v, u) for u, v in edges.tolist()}
    assert {(u, v) for u, v in pairs.tolist()} <= undirected
    assert pairs.size(0) == 60
    assert torch.equal(weights, torch.ones(60))


def test_node_without_neighbours_yields_no_pairs():
    adj, _ = build_adjacency(torch.tensor([[0, 1]]), 4)
    pairs, weights = random_walk_pairs(adj, torch.tensor([2, 3]), 3)
    assert pairs.shape == (0, 2)
    assert weights.shape == (0,)


def test_graph_without_any_edge_yields_no_pairs():
    adj, _ = build_adjacency(torch.empty(0, 2, dtype=torch.long), 3)
    pairs, weights = random_walk_pairs(adj, torch.arange(3), 2)
    assert pairs.shape == (0, 2)
    assert weights.shape == (0,)


def test_walk_starts_train_endpoints_gives_each_endpoint_once():
    edges = torch.tensor([[5, 1], [1, 7], [7, 5], [2, 7]])
    assert walk_starts("train_endpoints", 10, edges).tolist() == [1, 2, 5, 7]


def test_walk_starts_all_gives_every_node():
    assert torch.equal(walk_starts("all", 4, torch.tensor([[0, 1]])), torch.arange(4))


def test_a_round_walked_in_runs_of_chunks_is_the_round_walked_at_once():
    edges = torch.randint(0, 40, (120, 2))
    adj, _ = build_adjacency(edges, 40)
    starts = walk_starts("edge_endpoints", 40, edges)
    whole = walk_round(adj, starts, 5, seed=3, walk_round=1, chunk_size=16)
    runs = [walk_round(adj, starts, 5, 3, 1, range(a, b), chunk_size=16)
            for a, b in ((0, 4), (4, 4), (4, 15), (15, 15))]
    assert torch.equal(torch.cat([p for p, _ in runs]), whole[0])
    assert torch.equal(torch.cat([w for _, w in runs]), whole[1])
    other_round = walk_round(adj, starts, 5, seed=3, walk_round=2, chunk_size=16)
    assert not torch.equal(other_round[0], whole[0])


def test_chunk_seeds_differ_by_seed_round_and_chunk():
    seeds = {chunk_seed(s, r, c) for s in range(3) for r in range(3) for c in range(3)}
    assert len(seeds) == 27 and all(0 <= s < 2**63 for s in seeds)
