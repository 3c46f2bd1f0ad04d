"""HeaRT's hard negatives as HeaRT's generator makes them: the same negatives
as its rules written out one pair at a time, its ranks and push by hand on
small graphs, its masks (the other held-out links stay eligible under
``heart``, never under ``heart_filtered``), and its published files read and
checked."""
import networkx as nx
import numpy as np
import pytest
import torch

from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.scoring.hard_negatives import (
    _Push,
    hard_negative_pairs,
    hard_negatives,
    heart_protocol,
    heuristic_ranks,
    split_hard_negatives,
)
from plnlp_core.scoring.heart_files import HeartFileError, read_heart_files
from plnlp_core.scoring.heuristics import adjacency
from tests.core.heart_rules import literal_negatives

OWN = DatasetInfo("own", "own", "auc", directed=False, feature_dim=0)


def random_graph(num_nodes: int, num_edges: int, seed: int) -> torch.Tensor:
    return torch.tensor(list(nx.gnm_random_graph(num_nodes, num_edges, seed=seed).edges()))


def split_of(train: torch.Tensor, valid: torch.Tensor, test: torch.Tensor,
             num_nodes: int, info: DatasetInfo = OWN) -> LinkSplit:
    none = torch.empty(0, 2, dtype=torch.long)
    return LinkSplit(info, num_nodes, None, train, None, None, valid, none, test, none)


@pytest.mark.parametrize("seed", range(6))
def test_the_negatives_are_those_of_heart_s_rules_applied_one_pair_at_a_time(seed):
    num_nodes, num_edges, k, eps = [(24, 50, 10, 1e-2), (40, 160, 30, 1e-3)][seed % 2]
    edges = random_graph(num_nodes, num_edges, seed)
    order = torch.randperm(len(edges), generator=torch.Generator().manual_seed(seed))
    train, valid = edges[order][: int(0.7 * num_edges)], edges[order][int(0.7 * num_edges):]
    for masked in (train, None, edges):  # HeaRT's valid mask, collab's (none), filtered
        expected = literal_negatives(train, num_nodes, valid, masked, k, eps)
        got = hard_negatives(train, num_nodes, valid, masked, k, eps=eps, batch_size=5)
        assert torch.equal(got, expected)


def test_ranks_take_the_best_place_of_their_value_counted_from_the_largest():
    # positives 3 5 5 2 3: 5 first (twice), then 3 two distinct values below the top... at 3,
    # 2 at 4; 0 one after the last (5), masked two after (6)
    scores = torch.tensor([[3.0, 5, 5, 0, -1, 2, 3]])
    assert heuristic_ranks(scores).tolist() == [[3, 1, 1, 5, 6, 4, 3]]
    assert heuristic_ranks(torch.tensor([[0.0, -1, 0]])).tolist() == [[1, 2, 1]]


def test_the_push_spreads_residuals_by_hand_on_a_path():
    # 0-1-2, alpha 0.5, eps 0.1: push 0 (score 0.5, 1 gets 0.25 >= 0.1), push 1 (0.25;
    # 0 and 2 get 0.0625 >= 0.05), push 2 (0.0625; 1 gets 0.03125 < 0.1), push 0
    # (0.0625 more; 1 reaches 0.0625 < 0.1)
    push = _Push(adjacency(torch.tensor([[0, 1], [1, 2]]), 3), eps=0.1, alpha=0.5)
    assert push.rows(np.array([0])).tolist() == [[0.5625, 0.25, 0.0625]]


@pytest.mark.parametrize(("num_nodes", "num_edges", "eps"),
                         [(60, 320, 1e-4), (300, 900, 1e-4), (200, 12_000, 1e-5)])
def test_both_ways_of_pushing_give_the_same_sums_in_the_same_order(num_nodes, num_edges, eps):
    # mean degrees 10.7, 6 and 120: the first two take the lists, the third numpy; each eps
    # small enough that a push reaches past the anchor's neighbours
    push = _Push(adjacency(random_graph(num_nodes, num_edges, seed=num_edges), num_nodes),
                 eps=eps, alpha=0.15)
    assert push.walk == (push._push_lists if num_edges < 10_000 else push._push_arrays)
    for anchor in range(0, num_nodes, num_nodes // 5):
        (nodes, sums), (array_nodes, array_sums) = (push._push_lists(anchor),
                                                    push._push_arrays(anchor))
        assert nodes.tolist() == array_nodes.tolist() and sums.tolist() == array_sums.tolist()
        assert len(nodes) > push.degree[anchor] + 1


def test_the_node_both_heuristics_put_first_is_the_negative():
    # for anchor 0 (masked: 1, 2, 3): 4 shares 1 and 2 with it (2 / deg 2 = 1), 5 shares 1
    # (1 / 2), 6 none; for anchor 3 (masked: 6, 0): only 5 shares a neighbour (6)
    edges = torch.tensor([[0, 1], [0, 2], [1, 4], [2, 4], [1, 5], [5, 6], [3, 6]])
    negatives = hard_negatives(edges, 7, torch.tensor([[0, 3]]), edges, 2, eps=1e-6)
    assert negatives.tolist() == [[4, 5]]
    assert hard_negative_pairs(torch.tensor([[0, 3]]), negatives).tolist() == [[[0, 4], [5, 3]]]


def test_under_heart_another_test_link_of_the_anchor_is_a_negative_under_filtered_never():
    # test links (0, 5) and (0, 6); 6 shares 1 and 2 with 0, so it is 0's best candidate
    train = torch.tensor([[0, 1], [0, 2], [1, 6], [2, 6], [3, 4], [4, 5], [1, 7], [7, 3]])
    test = torch.tensor([[0, 5], [0, 6]])
    split = split_of(train, torch.tensor([[3, 7]]), test, 8)
    heart = split_hard_negatives(split, num_negatives=4)["test"]
    filtered = split_hard_negatives(split, num_negatives=4, mode="heart_filtered")["test"]
    assert 6 in heart[0, :2].tolist()  # the pair (0, 6), a true link, ranked below (0, 5)
    for negatives in (heart, filtered):
        pairs = hard_negative_pairs(test, negatives).view(-1, 2).tolist()
        assert not any(tuple(sorted(p)) in {(0, 1), (0, 2), (3, 4), (4, 5)} for p in pairs)
    pairs = hard_negative_pairs(test, filtered).view(-1, 2).tolist()
    known = {tuple(sorted(e)) for e in torch.cat([train, test, torch.tensor([[3, 7]])]).tolist()}
    assert not any(tuple(sorted(p)) in known for p in pairs)


def test_a_validation_pair_masks_training_links_and_a_test_pair_validation_links_too():
    edges = random_graph(50, 300, seed=3)
    train, valid, test = edges[:200], edges[200:250], edges[250:]
    parts = split_hard_negatives(split_of(train, valid, test, 50), num_negatives=20)
    keys = {tuple(sorted(e)) for e in train.tolist()}
    valid_pairs = hard_negative_pairs(valid, parts["valid"]).view(-1, 2).tolist()
    assert not any(tuple(sorted(p)) in keys for p in valid_pairs)
    keys |= {tuple(sorted(e)) for e in valid.tolist()}
    test_pairs = hard_negative_pairs(test, parts["test"]).view(-1, 2).tolist()
    assert not any(tuple(sorted(p)) in keys for p in test_pairs)
    assert all(a != b for a, b in valid_pairs + test_pairs)


def test_collab_masks_nothing_but_the_pair_as_heart_s_script_does():
    assert not heart_protocol("collab").mask_known and heart_protocol("collab").valid_in_test
    assert heart_protocol("ddi").eps == 1e-5 and heart_protocol("ppa").eps == 5e-6
    edges = torch.tensor([[0, 1], [0, 2], [1, 2]])
    negatives = hard_negatives(edges, 3, torch.tensor([[0, 1]]), None, 2, eps=1e-3)
    assert negatives.tolist() == [[2, 2]]  # (0, 2) and (2, 1) are training links


def test_an_anchor_with_few_candidates_draws_the_rest_from_heart_s_seeded_stream():
    # 0's only scored candidate is 2 (through 1); 3 to 9 score 0 and fill the rest
    edges = torch.tensor([[0, 1], [1, 2]])
    pos = torch.tensor([[0, 1]])
    first = hard_negatives(edges, 10, pos, edges, 8)
    again = hard_negatives(edges, 10, pos, edges, 8, rng=np.random.RandomState(42))
    other = hard_negatives(edges, 10, pos, edges, 8, rng=np.random.RandomState(7))
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert first[0, 0] == 2 and set(first[0, 1:4].tolist()) <= set(range(3, 10))


def test_shapes_and_which_endpoint_is_replaced():
    edges = random_graph(50, 200, seed=2)
    train, valid = edges[:150], edges[150:]
    negatives = hard_negatives(train, 50, valid, train, num_negatives=10)
    assert negatives.shape == (len(valid), 10) and negatives.dtype == torch.long
    pairs = hard_negative_pairs(valid, negatives)
    assert pairs.shape == (len(valid), 10, 2)
    assert (pairs[:, :5, 0] == valid[:, :1]).all() and (pairs[:, :5, 1] == negatives[:, :5]).all()
    assert (pairs[:, 5:, 1] == valid[:, 1:]).all() and (pairs[:, 5:, 0] == negatives[:, 5:]).all()


def test_refusals():
    edges = torch.tensor([[0, 1], [1, 2], [0, 2]])
    with pytest.raises(ValueError, match="even"):
        hard_negatives(edges, 4, torch.tensor([[0, 3]]), edges, num_negatives=5)
    with pytest.raises(ValueError, match="node 0 has a masked link with every other node"):
        hard_negatives(edges, 3, torch.tensor([[0, 1]]), edges, num_negatives=2)
    with pytest.raises(ValueError, match="mode"):
        split_hard_negatives(split_of(edges, edges, edges, 3), 2, mode="strict")


def heart_file(pos: torch.Tensor, negatives: torch.Tensor) -> np.ndarray:
    """What HeaRT's generator saves: ``[P, K, 2]`` pairs."""
    return hard_negative_pairs(pos, negatives).numpy()


def test_published_files_are_read_back_as_the_negatives_they_hold(tmp_path):
    edges = random_graph(40, 160, seed=8)
    split = split_of(edges[:100], edges[100:130], edges[130:], 40)
    parts = split_hard_negatives(split, num_negatives=6)
    np.save(tmp_path / "heart_valid_samples.npy", heart_file(split.valid_pos, parts["valid"]))
    subset = split.test_pos[::2]  # HeaRT's ogbl-ppa files rank a subset of the positives
    np.save(tmp_path / "heart_test_samples.npy", heart_file(subset, parts["test"][::2]))
    read = read_heart_files(tmp_path, split, 6)
    assert torch.equal(read["valid"][0], split.valid_pos)
    assert torch.equal(read["valid"][1], parts["valid"])
    assert torch.equal(read["test"][0], subset) and torch.equal(read["test"][1], parts["test"][::2])


def another_first_positive(samples: np.ndarray) -> np.ndarray:
    """The file with its first row ranking the pair (b, b), no positive."""
    samples = samples.copy()
    samples[0, :3, 0] = samples[0, 3, 1]
    return samples


@pytest.mark.parametrize("spoil, message", [
    (lambda s: s[:, :4], r"shape \[10, 4, 2\], not \[positives, 6, 2\]"),
    (lambda s: np.where(s == s.max(), 99, s), "names nodes up to 99 but the graph has 40 nodes"),
    (lambda s: s[:, ::-1], "does not keep one source"),
    (lambda s: s.astype(np.float32), "holds float32 values"),
    (lambda s: another_first_positive(s), "which is no positive of this split part"),
])
def test_a_published_file_that_cannot_be_used_is_refused_in_one_sentence(tmp_path, spoil,
                                                                           message):
    edges = random_graph(40, 160, seed=8)
    split = split_of(edges[:100], edges[100:110], edges[110:120], 40)
    parts = split_hard_negatives(split, num_negatives=6)
    np.save(tmp_path / "heart_test_samples.npy", heart_file(split.test_pos, parts["test"]))
    samples = np.ascontiguousarray(spoil(heart_file(split.valid_pos, parts["valid"])))
    np.save(tmp_path / "heart_valid_samples.npy", samples)
    with pytest.raises(HeartFileError, match=message):
        read_heart_files(tmp_path, split, 6)


def test_missing_and_pickled_files_are_refused_without_unpickling(tmp_path):
    split = split_of(torch.tensor([[0, 1]]), torch.tensor([[1, 2]]), torch.tensor([[0, 2]]), 3)
    with pytest.raises(HeartFileError, match="heart_valid_samples.npy does not exist"):
        read_heart_files(tmp_path, split, 2)
    np.save(tmp_path / "heart_valid_samples.npy", np.array([{"x": 1}], dtype=object),
            allow_pickle=True)
    with pytest.raises(HeartFileError, match="is not a numeric .npy array"):
        read_heart_files(tmp_path, split, 2)
