"""The GNN encoder over the sparse CSR adjacency of build_adjacency."""
import pytest
import torch

from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.nn import ENCODERS, GNNEncoder, NodeInput

NUM_NODES = 7
EDGES = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [1, 5]])  # node 6 isolated


@pytest.mark.parametrize(("name", "out_channels"), [
    ("sage", 12), ("gcn", 12), ("gat", 12), ("agdn", 12), ("none", 10),
])
def test_encoder_output_has_one_row_per_node_and_out_channels_columns(name, out_channels):
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    encoder = GNNEncoder(name, 10, 12, num_layers=2)
    h = encoder(torch.randn(NUM_NODES, 10), adj)
    assert encoder.out_channels == out_channels
    assert h.shape == (NUM_NODES, out_channels)
    assert torch.isfinite(h).all()


@pytest.mark.parametrize("name", ["sage", "gcn", "gat", "agdn", "none"])
def test_encoder_gradients_reach_the_node_embedding(name):
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    node_input = NodeInput("embedding", NUM_NODES, 10, 0)
    encoder = GNNEncoder(name, node_input.out_channels, 12, num_layers=2)
    encoder(node_input(None), adj).square().sum().backward()
    grad = node_input.embedding.weight.grad
    assert grad is not None
    assert grad.abs().sum() > 0


def test_sage_encoder_mixes_in_neighbours():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    encoder = GNNEncoder("sage", 4, 4, num_layers=1)
    x = torch.randn(NUM_NODES, 4)
    before = encoder(x, adj)
    x2 = x.clone()
    x2[2] += 1.0  # node 2 neighbours 1 and 3, not 0
    after = encoder(x2, adj)
    assert not torch.allclose(before[1], after[1])
    torch.testing.assert_close(before[0], after[0])


def test_none_encoder_returns_its_input():
    x = torch.randn(NUM_NODES, 5)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    encoder = GNNEncoder("none", 5, 99, num_layers=3)
    assert len(encoder.convs) == 0
    assert torch.equal(encoder(x, adj), x)


def test_encoder_stacks_num_layers_convolutions():
    assert len(GNNEncoder("gcn", 4, 8, num_layers=3).convs) == 3


def test_node_input_concatenates_embedding_and_features():
    node_input = NodeInput("both", NUM_NODES, 6, 3)
    x = torch.randn(NUM_NODES, 3)
    out = node_input(x)
    assert node_input.out_channels == 9
    assert out.shape == (NUM_NODES, 9)
    assert torch.equal(out[:, 6:], x)
    assert torch.equal(NodeInput("features", NUM_NODES, 6, 3)(x), x)


def test_unknown_encoder_name_raises_plnlp_error_listing_the_valid_names():
    assert ENCODERS.names == ["agdn", "gat", "gcn", "none", "pure_gcn", "sage", "sum"]
    with pytest.raises(PLNLPError, match="agdn, gat, gcn, none, pure_gcn, sage, sum"):
        GNNEncoder("gin", 4, 4, 2)


def test_activate_last_layer_applies_relu_and_dropout_after_the_only_layer():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    x = torch.randn(NUM_NODES, 10)
    plain = GNNEncoder("sage", 10, 12, num_layers=1, dropout=0.5)
    activated = GNNEncoder("sage", 10, 12, num_layers=1, dropout=0.5, activate_last_layer=True)
    activated.load_state_dict(plain.state_dict())
    plain.eval(), activated.eval()
    assert (plain(x, adj) < 0).any()
    torch.testing.assert_close(activated(x, adj), plain(x, adj).relu())
    activated.train()
    torch.manual_seed(1)
    dropped = activated(x, adj)
    kept = plain(x, adj).relu() * 2  # dropout 0.5 scales what it keeps by 2
    assert ((dropped == 0) | torch.isclose(dropped, kept)).all()
    assert ((dropped == 0) & (kept != 0)).any()


def test_initial_residual_at_zero_leaves_the_encoder_unchanged():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    x = torch.randn(NUM_NODES, 6)
    plain = GNNEncoder("sage", 6, 6, num_layers=2)
    off = GNNEncoder("sage", 6, 6, num_layers=2, initial_residual=0.0)
    off.load_state_dict(plain.state_dict())
    assert torch.equal(plain(x, adj), off(x, adj))


def test_initial_residual_adds_alpha_times_the_input_before_each_activation():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    x = torch.randn(NUM_NODES, 6)
    encoder = GNNEncoder("gcn", 6, 6, num_layers=2, initial_residual=0.1).eval()
    first, second = encoder.convs
    expected = second(torch.relu(first(x, adj) + 0.1 * x), adj) + 0.1 * x
    torch.testing.assert_close(encoder(x, adj), expected)


def test_initial_residual_lets_the_input_reach_an_output_whose_layers_are_zero():
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    x = torch.randn(NUM_NODES, 4)
    encoder = GNNEncoder("sage", 4, 4, num_layers=2, initial_residual=0.5)
    for parameter in encoder.parameters():
        torch.nn.init.zeros_(parameter)
    torch.testing.assert_close(encoder(x, adj), 0.5 * x)


def test_initial_residual_refuses_an_input_of_another_size_than_the_layers():
    with pytest.raises(ValueError, match="initial_residual"):
        GNNEncoder("sage", 5, 6, num_layers=2, initial_residual=0.1)


def test_hop_diffusion_sums_the_hops_of_the_mean_transition_matrix_with_their_weights():
    from plnlp_core.nn.encoders.hop_diffusion import HopDiffusionConv

    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    conv = HopDiffusionConv(5, 3, hops=2)
    with torch.no_grad():
        conv.hop_weights.copy_(torch.randn(3, 3))
    x = torch.randn(NUM_NODES, 5)
    a = adj.to_dense()
    transition = a / a.sum(dim=1, keepdim=True).clamp(min=1)  # node 6 has no neighbours
    z = conv.lin(x)
    theta = conv.hop_weights
    expected = (theta[0] * z + theta[1] * (transition @ z)
                + theta[2] * (transition @ transition @ z) + conv.lin_residual(x))
    torch.testing.assert_close(conv(x, adj), expected)


def test_hop_diffusion_reads_as_far_as_its_hops():
    from plnlp_core.nn.encoders.hop_diffusion import HopDiffusionConv

    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)  # node 3 is 2 hops from node 1, 3 from node 5
    x = torch.randn(NUM_NODES, 4)
    moved = x.clone()
    moved[5] += 1.0
    for hops, reaches in ((2, False), (3, True)):
        conv = HopDiffusionConv(4, 4, hops=hops)
        changed = not torch.allclose(conv(x, adj)[3], conv(moved, adj)[3])
        assert changed == reaches


def test_build_model_gives_agdn_layers_their_hops():
    from plnlp_core.assembly import build_model
    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.datasets import DATASETS

    config = PLNLPConfig(encoder="agdn", diffusion_hops=2, embedding_dim=8, hidden_channels=8)
    model = build_model(config, DATASETS.get("ddi"), NUM_NODES)
    assert [conv.hops for conv in model.encoder.convs] == [2, 2]
    assert model.encoder.convs[0].hop_weights.shape == (3, 8)


def test_an_encoder_without_relu_is_a_stack_of_its_convolutions():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    x = torch.randn(NUM_NODES, 6)
    encoder = GNNEncoder("gcn", 6, 6, num_layers=2, dropout=0.5, relu=False).eval()
    first, second = encoder.convs
    torch.testing.assert_close(encoder(x, adj), second(first(x, adj), adj))
    with_relu = GNNEncoder("gcn", 6, 6, num_layers=2, dropout=0.5).eval()
    with_relu.load_state_dict(encoder.state_dict())
    torch.testing.assert_close(with_relu(x, adj), second(torch.relu(first(x, adj)), adj))
    assert not torch.allclose(encoder(x, adj), with_relu(x, adj))


def test_an_encoder_without_relu_keeps_its_dropout_in_training():
    torch.manual_seed(0)
    adj, _ = build_adjacency(EDGES, NUM_NODES)
    encoder = GNNEncoder("sage", 6, 6, num_layers=1, dropout=0.5, activate_last_layer=True,
                         relu=False).train()
    h = encoder(torch.randn(NUM_NODES, 6), adj)
    assert (h == 0).any() and (h < 0).any()  # dropped entries, and negatives no ReLU cut


@pytest.mark.parametrize("options", [{}, {"residual": True, "layer_norm": True},
                                     {"initial_residual": 0.5, "activate_last_layer": True}])
def test_chunked_inference_gives_every_node_the_full_forward_s_vector(monkeypatch, options):
    from plnlp_core.nn.encoders import encoder as module

    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(50, (300, 2), generator=generator)
    adj, _ = build_adjacency(edges[edges[:, 0] != edges[:, 1]], 50)
    model = GNNEncoder("sage", 8, 8, 3, dropout=0.2, **options).eval()
    x = torch.randn(50, 8, generator=generator)
    with torch.no_grad():
        whole = model(x, adj)
        monkeypatch.setattr(module, "CHUNKED_FROM_NODES", 1)
        monkeypatch.setattr(module, "CHUNK_ROWS", 7)
        assert model._encodes_in_chunks(adj)
        chunked = model(x, adj)
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    assert not model._encodes_in_chunks(adj.to_sparse_coo())
    assert torch.is_grad_enabled() and not model._encodes_in_chunks(adj)  # training: whole
