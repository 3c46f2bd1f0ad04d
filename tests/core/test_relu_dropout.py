"""relu_dropout is ReLU then dropout: the right drop rate, the expectation
kept, and the gradient of what it computed."""
import pytest
import torch

from plnlp_core.nn.relu_dropout import random_levels, relu_dropout


def test_random_levels_are_uniform_over_15_bits_in_every_place_of_a_draw():
    """Four entries come from one int64 draw: each place, the top one too,
    spans 0 .. 32767 evenly."""
    torch.manual_seed(0)
    levels = random_levels(torch.Size([200_000, 4]), torch.device("cpu"))
    assert levels.dtype == torch.int16
    for place in range(4):
        column = levels[:, place].int()
        assert int(column.min()) == 0 and int(column.max()) == 32767
        assert float(column.float().mean()) == pytest.approx(16383.5, rel=0.01)
        assert float((column >= 16384).float().mean()) == pytest.approx(0.5, abs=0.005)
    assert random_levels(torch.Size([3, 5]), torch.device("cpu")).shape == (3, 5)  # not of 4


def test_drops_about_p_of_the_positive_entries_and_keeps_the_expectation():
    torch.manual_seed(0)
    x = torch.rand(400_000) + 0.5  # all positive
    y = relu_dropout(x, 0.3, training=True)
    assert (y == 0).float().mean().item() == pytest.approx(0.3, abs=0.005)
    assert y.mean().item() == pytest.approx(x.mean().item(), rel=0.01)
    kept = y != 0
    torch.testing.assert_close(y[kept], x[kept] / (1 - round(0.3 * 32768) / 32768))


def test_gradient_flows_through_the_kept_positive_entries_only():
    torch.manual_seed(1)
    x = torch.randn(1000, 16, requires_grad=True)
    y = relu_dropout(x, 0.5, training=True)
    g = torch.randn_like(y)
    y.backward(g)
    mask = (y > 0).float()
    torch.testing.assert_close(x.grad, g * mask * 2.0)
    assert ((x.detach() <= 0) <= (x.grad == 0)).all()


def test_is_plain_relu_in_evaluation_or_without_dropout():
    x = torch.randn(50, 8)
    assert torch.equal(relu_dropout(x, 0.5, training=False), x.relu())
    assert torch.equal(relu_dropout(x, 0.0, training=True), x.relu())


def test_follows_torchs_seed():
    x = torch.randn(100, 8)
    torch.manual_seed(3)
    a = relu_dropout(x, 0.3, True)
    torch.manual_seed(3)
    assert torch.equal(a, relu_dropout(x, 0.3, True))
