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


def test_residual_mlp_adds_the_pair_product_before_each_hidden_relu():
    torch.manual_seed(0)
    predictor = PREDICTORS.get("mlp")(CHANNELS, hidden_channels=CHANNELS, num_layers=3,
                                      residual=True).eval()
    h_src, h_dst = random_pairs()
    x0 = h_src * h_dst
    first, second, last = predictor.mlp.lins
    x = torch.relu(second(torch.relu(first(x0) + x0)) + x0)
    torch.testing.assert_close(predictor(h_src, h_dst), last(x).squeeze(-1))


def test_residual_mlp_keeps_the_pair_product_when_its_hidden_layers_are_zero():
    predictor = PREDICTORS.get("mlp")(CHANNELS, hidden_channels=CHANNELS, num_layers=4,
                                      residual=True).eval()
    for lin in predictor.mlp.lins[:-1]:
        torch.nn.init.zeros_(lin.weight)
        torch.nn.init.zeros_(lin.bias)
    h_src, h_dst = random_pairs()
    expected = predictor.mlp.lins[-1](torch.relu(h_src * h_dst)).squeeze(-1)
    torch.testing.assert_close(predictor(h_src, h_dst), expected)


def test_mlp_without_residual_scores_as_before():
    plain = build("mlp")
    torch.manual_seed(0)
    off = PREDICTORS.get("mlp")(CHANNELS, hidden_channels=16, num_layers=2, dropout=0.0,
                                residual=False).eval()
    h_src, h_dst = random_pairs()
    assert torch.equal(plain(h_src, h_dst), off(h_src, h_dst))


def test_residual_mlp_refuses_hidden_layers_of_another_width_than_its_input():
    with pytest.raises(ValueError, match="residual"):
        PREDICTORS.get("mlp")(CHANNELS, hidden_channels=16, num_layers=2, residual=True)


def test_build_model_gives_the_mlp_predictor_its_residual_setting():
    from plnlp_core.assembly import build_model
    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.datasets import DATASETS

    for residual in (False, True):
        config = PLNLPConfig(predictor="mlp", predictor_residual=residual, embedding_dim=8,
                             hidden_channels=8, predictor_hidden=8)
        assert build_model(config, DATASETS.get("ddi"), 10).predictor.mlp.residual is residual
