"""Link predictors: dot and mlp are symmetric, bilinear and mlp_concat are
not, and each class says so in its ``symmetric`` flag."""
import pytest
import torch

from plnlp_core.errors import PLNLPError
from plnlp_core.nn import PREDICTORS

CHANNELS = 8


def build(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return PREDICTORS.get(name)(CHANNELS, hidden_channels=16, num_layers=2, dropout=0.0).eval()


def random_pairs() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return (torch.randn(32, CHANNELS, generator=generator),
            torch.randn(32, CHANNELS, generator=generator))


@pytest.mark.parametrize("name", ["dot", "mlp"])
def test_symmetric_predictor_scores_i_j_and_j_i_the_same(name):
    predictor = build(name)
    h_i, h_j = random_pairs()
    torch.testing.assert_close(predictor(h_i, h_j), predictor(h_j, h_i))
    assert predictor.symmetric is True


@pytest.mark.parametrize("name", ["bilinear", "mlp_concat"])
def test_directed_predictor_scores_some_pair_differently_each_way(name):
    predictor = build(name)
    h_i, h_j = random_pairs()
    forward, backward = predictor(h_i, h_j), predictor(h_j, h_i)
    assert (forward - backward).abs().max() > 1e-3
    assert predictor.symmetric is False


@pytest.mark.parametrize("name", ["dot", "mlp", "bilinear", "mlp_concat"])
def test_predictor_scores_one_value_per_pair(name):
    h_i, h_j = random_pairs()
    assert build(name)(h_i, h_j).shape == (32,)


def test_dot_predictor_is_the_inner_product():
    h_i = torch.tensor([[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0]])
    h_j = torch.tensor([[4.0, -1.0, 9.0, 0.0, 0.0, 0.0, 0.0, 1.0]])
    # 1 * 4 + 2 * -1 + 3 * 1 = 5
    assert build("dot")(h_i, h_j).item() == pytest.approx(5.0)


def test_predictor_symmetric_flags_match_the_registered_classes():
    flags = {name: PREDICTORS.get(name).symmetric for name in PREDICTORS.names}
    assert flags == {"bilinear": False, "dot": True, "mlp": True, "mlp_concat": False}


def test_unknown_predictor_name_raises_plnlp_error_listing_the_valid_names():
    with pytest.raises(PLNLPError, match="bilinear, dot, mlp, mlp_concat"):
        PREDICTORS.get("cosine")
