"""Every loss of plnlp_core.losses against sums worked out by hand.

The shared tiny example: two positives, two negatives each,

    pos = [2.0, 0.5]
    neg = [[1.0, 0.0],
           [1.0, 2.0]]

so the score differences d = s_neg - s_pos are

    d = [[-1.0, -2.0],
         [ 0.5,  1.5]].
"""
import math

import pytest
import torch

from plnlp_core.errors import PLNLPError
from plnlp_core.losses import (
    LOSSES,
    auc_loss,
    cross_entropy_loss,
    hinge_auc_loss,
    log_rank_loss,
    weighted_hinge_auc_loss,
)

POS = torch.tensor([2.0, 0.5])
NEG = torch.tensor([[1.0, 0.0], [1.0, 2.0]])


def softplus(z: float) -> float:
    return math.log1p(math.exp(z))


def test_auc_loss_is_the_sum_of_squared_one_plus_differences():
    # (1 + d)^2: 0^2 + (-1)^2 + 1.5^2 + 2.5^2 = 0 + 1 + 2.25 + 6.25 = 9.5
    assert auc_loss(POS, NEG).item() == pytest.approx(9.5)


def test_hinge_auc_loss_clamps_each_pair_at_zero_before_squaring():
    # max(0, 1 + d)^2: 0 + 0 (1 + -2 = -1 clamps to 0) + 2.25 + 6.25 = 8.5
    assert hinge_auc_loss(POS, NEG).item() == pytest.approx(8.5)


def test_weighted_hinge_auc_loss_uses_each_weight_as_margin_and_factor():
    weight = torch.tensor([1.0, 0.5])
    # row 0, gamma 1:   1 * max(0, 1 - 1)^2 + 1 * max(0, 1 - 2)^2   = 0 + 0 = 0
    # row 1, gamma 0.5: 0.5 * max(0, 0.5 + 0.5)^2 + 0.5 * max(0, 0.5 + 1.5)^2
    #                 = 0.5 * 1 + 0.5 * 4 = 2.5
    assert weighted_hinge_auc_loss(POS, NEG, weight).item() == pytest.approx(2.5)


def test_weighted_hinge_auc_loss_with_unit_weights_equals_hinge_auc_loss():
    ones = torch.ones(2)
    assert weighted_hinge_auc_loss(POS, NEG, ones).item() == pytest.approx(
        hinge_auc_loss(POS, NEG).item())


def test_weighted_hinge_auc_loss_without_weights_raises_plnlp_error():
    with pytest.raises(PLNLPError, match="weighted_hinge_auc"):
        weighted_hinge_auc_loss(POS, NEG, None)


def test_cross_entropy_loss_counts_the_mean_of_each_positives_negatives():
    # positives: softplus(-2) + softplus(-0.5)
    # negatives: (softplus(1) + softplus(0)) / 2 + (softplus(1) + softplus(2)) / 2
    expected = (softplus(-2.0) + softplus(-0.5)
                + (softplus(1.0) + softplus(0.0)) / 2 + (softplus(1.0) + softplus(2.0)) / 2)
    # = 0.126928 + 0.474077 + (1.313262 + 0.693147) / 2 + (1.313262 + 2.126928) / 2
    # = 0.601005 + 1.003204 + 1.720095 = 3.324304
    assert expected == pytest.approx(3.324304, abs=1e-6)
    assert cross_entropy_loss(POS, NEG).item() == pytest.approx(expected, rel=1e-6)


def test_log_rank_loss_is_the_sum_of_softplus_of_differences():
    # softplus(d): softplus(-1) + softplus(-2) + softplus(0.5) + softplus(1.5)
    expected = softplus(-1.0) + softplus(-2.0) + softplus(0.5) + softplus(1.5)
    # = 0.313262 + 0.126928 + 0.974077 + 1.701413 = 3.115680
    assert expected == pytest.approx(3.115680, abs=1e-6)
    assert log_rank_loss(POS, NEG).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("name", ["auc", "hinge_auc", "weighted_hinge_auc", "ce", "log_rank"])
def test_losses_are_sums_so_split_batches_add_up(name):
    loss = LOSSES.get(name)
    weight = torch.tensor([0.7, 1.3])
    whole = loss(POS, NEG, weight)
    halves = loss(POS[:1], NEG[:1], weight[:1]) + loss(POS[1:], NEG[1:], weight[1:])
    assert whole.item() == pytest.approx(halves.item())


def test_loss_table_maps_each_name_to_its_function():
    assert LOSSES.get("auc") is auc_loss
    assert LOSSES.get("hinge_auc") is hinge_auc_loss
    assert LOSSES.get("weighted_hinge_auc") is weighted_hinge_auc_loss
    assert LOSSES.get("ce") is cross_entropy_loss
    assert LOSSES.get("log_rank") is log_rank_loss


def test_unknown_loss_name_raises_plnlp_error_listing_the_valid_names():
    with pytest.raises(PLNLPError) as caught:
        LOSSES.get("nope")
    message = str(caught.value)
    assert "'nope'" in message
    for name in ("auc", "ce", "hinge_auc", "log_rank", "weighted_hinge_auc"):
        assert name in message
