"""InputProjection: a linear map of dropped-out features from their
non-zero entries alone, and NodeInput's projected input."""
import torch
from torch import nn

from plnlp_core.nn.input_projection import InputProjection
from plnlp_core.nn.node_input import NodeInput


def bag_of_words(rows: int = 30, words: int = 50) -> torch.Tensor:
    torch.manual_seed(0)
    x = (torch.rand(rows, words) < 0.1).float()
    x[3] = 0  # a node without words
    return x


def test_without_dropout_it_is_the_dense_linear_map_forward_and_backward():
    x = bag_of_words()
    projection = InputProjection(50, 8, dropout=0.5).eval()
    linear = nn.Linear(50, 8)
    with torch.no_grad():
        linear.weight.copy_(projection.weight.t())
        linear.bias.copy_(projection.bias)
    out = projection(x)
    assert torch.allclose(out, linear(x), atol=1e-6)
    assert torch.equal(out[3], projection.bias.detach())
    out.square().sum().backward()
    linear(x).square().sum().backward()
    assert torch.allclose(projection.weight.grad, linear.weight.grad.t(), atol=1e-5)


def test_sparse_features_give_the_dense_features_output_and_gradient():
    x = bag_of_words()
    projection = InputProjection(50, 8).eval()
    dense = projection(x)
    dense.square().sum().backward()
    expected, projection.weight.grad = projection.weight.grad, None
    sparse = projection(x.to_sparse())
    sparse.square().sum().backward()
    assert torch.allclose(sparse, dense, atol=1e-6)
    assert torch.allclose(projection.weight.grad, expected, atol=1e-5)


def test_node_input_reads_sparse_features_raw_by_rows_and_as_categories():
    x = bag_of_words()
    raw = NodeInput("features", 30, 8, 50).eval()
    nodes = torch.tensor([5, 0, 29])
    assert torch.equal(raw(x.to_sparse()), x)
    assert torch.equal(raw(x.to_sparse(), nodes), x[nodes])
    one_hot = torch.eye(50)[torch.arange(30) % 50]
    categories = NodeInput("features", 30, 8, 50, num_categories=50).eval()
    assert torch.equal(categories(one_hot.to_sparse()), categories(one_hot))


def test_in_training_each_word_is_dropped_or_scaled_by_one_over_one_minus_p():
    x = torch.zeros(200, 5)
    x[torch.arange(200), torch.arange(200) % 5] = 1.0  # one word a node
    projection = InputProjection(5, 4, dropout=0.75, bias=False).train()
    out = projection(x)
    kept = out.abs().sum(dim=1) > 0
    expected = projection.weight[torch.arange(200) % 5] / 0.25
    assert torch.allclose(out[kept], expected[kept])
    assert 0.1 < kept.float().mean() < 0.45  # about a quarter kept


def test_a_new_tensor_is_read_again_not_the_kept_entries():
    projection = InputProjection(50, 8).eval()
    x = bag_of_words()
    first = projection(x)
    other = torch.flip(x, dims=[0])
    assert torch.allclose(projection(other), torch.flip(first, dims=[0]), atol=1e-6)


def test_node_input_projects_embedding_and_features_to_the_set_width():
    x = bag_of_words()
    both = NodeInput("both", 30, 6, 50, projection=16).eval()
    assert both.out_channels == 16
    out = both(x)
    expected = both.embedding_projection(both.embedding.weight) + both.feature_projection(x)
    assert out.shape == (30, 16) and torch.allclose(out, expected)
    assert NodeInput("features", 30, 6, 50).out_channels == 50


def test_a_projection_below_one_channel_is_refused_and_a_weight_free_encoder_takes_one():
    import pytest

    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.datasets import DatasetInfo
    from plnlp_core.errors import PLNLPError

    with pytest.raises(PLNLPError, match="input_projection must be at least 1"):
        PLNLPConfig.from_mapping({"input_projection": 0}).validate()
    info = DatasetInfo("cora", "ogbl-ddi", "hits@100", directed=False, feature_dim=1433)
    settings = {"dataset": "cora", "encoder": "pure_gcn", "node_input": "features",
                "hidden_channels": 16}
    with pytest.raises(PLNLPError, match="input_projection to 16"):
        PLNLPConfig.from_mapping(settings).validate(info)
    PLNLPConfig.from_mapping({**settings, "input_projection": 16}).validate(info)


def test_projection_dropout_drops_the_projected_channels_in_training_alone():
    x = bag_of_words()
    node_input = NodeInput("features", 30, 6, 50, projection=64, projection_dropout=0.75)
    projected = node_input.feature_projection(x)
    out = node_input.train()(x)
    kept = out != 0
    assert torch.allclose(out[kept], projected[kept] / 0.25, atol=1e-5)
    assert 0.15 < kept.float().mean() < 0.35  # about a quarter of the channels kept
    assert torch.allclose(node_input.eval()(x), projected, atol=1e-6)
