"""HeaRT's metrics: each positive is ranked among its own negatives, a tie
counting half; a random scorer's MRR is the harmonic mean's; a scorer is
scored the same in any chunking."""
import math

import pytest
import torch

from plnlp_core.scoring.heart import (
    HITS_K,
    heart_ceiling,
    heart_evaluate,
    heart_metrics,
    heart_ranks,
    heart_split_metrics,
    split_heart_negatives,
)


def test_ranks_and_metrics_on_a_hand_computed_example_with_ties():
    pos = torch.tensor([3.0, 1.0, 2.0])
    neg = torch.tensor([[1.0, 2.0, 3.0],   # one tie: rank 1.5
                        [2.0, 3.0, 4.0],   # three above: rank 4
                        [2.0, 2.0, 0.0]])  # two ties: rank 2
    assert heart_ranks(pos, neg).tolist() == [1.5, 4.0, 2.0]
    metrics = heart_metrics(pos, neg, hits_k=(1, 2, 3))
    assert metrics["heart_mrr"] == pytest.approx((1 / 1.5 + 1 / 4 + 1 / 2) / 3)
    assert metrics["heart_hits_1"] == 0.0  # a tie at the top is not a hit at 1
    assert metrics["heart_hits_2"] == pytest.approx(2 / 3)
    assert metrics["heart_hits_3"] == pytest.approx(2 / 3)


def test_keys_are_heart_s_and_not_ogb_s():
    metrics = heart_metrics(torch.rand(4), torch.rand(4, 7))
    assert list(metrics) == ["heart_mrr", *(f"heart_hits_{k}" for k in HITS_K)]
    assert HITS_K == (1, 3, 10, 20, 50, 100)


def test_a_perfect_scorer_has_mrr_1_and_a_hopeless_one_1_over_k_plus_1():
    neg = torch.rand(10, 50)
    assert heart_metrics(torch.full((10,), 2.0), neg)["heart_mrr"] == 1.0
    worst = heart_metrics(torch.full((10,), -1.0), neg)
    assert worst["heart_mrr"] == pytest.approx(1 / 51) and worst["heart_hits_50"] == 0.0


def test_a_random_scorer_has_the_expected_mrr_on_500_negatives():
    generator = torch.Generator().manual_seed(0)
    pos, neg = torch.rand(20000, generator=generator), torch.rand(20000, 500, generator=generator)
    metrics = heart_metrics(pos, neg)
    # the rank is uniform on 1..501: E[1/r] = H_501 / 501, P(r <= k) = k / 501
    harmonic = sum(1 / r for r in range(1, 502))
    assert metrics["heart_mrr"] == pytest.approx(harmonic / 501, abs=2e-3)
    assert metrics["heart_hits_100"] == pytest.approx(100 / 501, abs=1e-2)
    assert math.isclose(metrics["heart_hits_1"], 1 / 501, abs_tol=2e-3)


def test_evaluate_scores_each_positive_against_its_own_pairs_in_any_chunking():
    pos = torch.tensor([[0, 1], [2, 5], [4, 3]])
    negatives = torch.tensor([[7, 9, 8, 6], [3, 4, 1, 0], [1, 6, 9, 2]])

    def closeness(pairs: torch.Tensor) -> torch.Tensor:
        return -(pairs[:, 0] - pairs[:, 1]).abs().float()

    # pairs scored: (0,7) (0,9) (8,1) (6,1); (2,3) (2,4) (1,5) (0,5); (4,1) (4,6) (9,3) (2,3)
    neg_score = -torch.tensor([[7.0, 9, 7, 5], [1, 2, 4, 5], [3, 2, 6, 1]])
    expected = heart_metrics(-torch.tensor([1.0, 3, 1]), neg_score)
    assert heart_evaluate(closeness, pos, negatives) == expected
    assert heart_evaluate(closeness, pos, negatives, batch_size=1) == expected
    assert expected["heart_mrr"] == pytest.approx((1 / 1 + 1 / 3 + 1 / 1.5) / 3)


@pytest.mark.slow  # 5 s on one core
def test_split_metrics_rank_each_part_against_its_own_negatives(ddi_standin_split):
    split = ddi_standin_split
    hard = split_heart_negatives(split, num_negatives=6)
    assert {part: tuple(n.shape) for part, n in hard.negatives.items()} == {
        "valid": (len(split.valid_pos), 6), "test": (len(split.test_pos), 6)}
    assert torch.equal(hard.positives["test"], split.test_pos)

    def scorer(pairs: torch.Tensor) -> torch.Tensor:
        return (pairs[:, 0] * 7 + pairs[:, 1]).float().sin()

    metrics = heart_split_metrics(scorer, hard)
    keys = list(heart_metrics(torch.rand(1), torch.rand(1, 2)))
    assert set(metrics) == {f"{part}_{key}" for part in ("valid", "test") for key in keys} | {
        f"{part}_{key.replace('heart_', 'heart_ceiling_')}" for part in ("valid", "test")
        for key in keys}
    assert metrics["test_heart_mrr"] == heart_evaluate(
        scorer, split.test_pos, hard.negatives["test"])["heart_mrr"]


@pytest.mark.slow  # 5 s on one core
def test_the_filtered_mode_s_keys_carry_its_name(ddi_standin_split):
    hard = split_heart_negatives(ddi_standin_split, num_negatives=6, mode="heart_filtered")
    metrics = heart_split_metrics(lambda pairs: pairs.float().sum(dim=1), hard)
    assert "test_heart_filtered_mrr" in metrics and "test_heart_mrr" not in metrics
    assert metrics["test_heart_filtered_ceiling_mrr"] == 1.0


def test_the_ceiling_ties_each_true_link_among_the_negatives_with_the_positive():
    links = torch.tensor([[0, 1], [0, 2], [3, 1]])
    pos = torch.tensor([[0, 1], [3, 1]])
    # row 0: (0,2) is a link, (0,4) is not, (3,1) is a link, (5,1) is not: rank 1 + 2/2
    # row 1: (3,4) (3,5) (0,1) (2,1): one link, (1,0) in the other direction: rank 1.5
    negatives = torch.tensor([[2, 4, 3, 5], [4, 5, 0, 2]])
    ceiling = heart_ceiling(pos, negatives, links, 6)
    assert ceiling["heart_ceiling_mrr"] == pytest.approx((1 / 2 + 1 / 1.5) / 2)
    assert ceiling["heart_ceiling_hits_1"] == 0.0
    assert ceiling["heart_ceiling_hits_3"] == 1.0


def test_the_ceiling_is_1_exactly_when_no_negative_is_a_true_link():
    links = torch.tensor([[0, 1], [2, 3]])
    pos = torch.tensor([[0, 1]])
    clean = heart_ceiling(pos, torch.tensor([[4, 5, 2, 3]]), links, 6)
    assert clean["heart_ceiling_mrr"] == 1.0
    assert all(value == 1.0 for value in clean.values())
    with_04 = torch.cat([links, torch.tensor([[0, 4]])])  # (0, 4) is now a true link
    dirty = heart_ceiling(pos, torch.tensor([[4, 5, 2, 3]]), with_04, 6)
    assert dirty["heart_ceiling_mrr"] < 1.0
