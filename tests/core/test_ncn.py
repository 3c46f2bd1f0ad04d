"""NCN's options at the edge level, each against a small dense reference:
the predictor, the weight-free sum and GCN encoders with their residual,
LayerNorm in the encoder, the encoder's own edge dropout, orthogonal
embeddings, input dropout, the predictor's learning rate, target-edge
removal off, edge dropout, the count features off and a categorical
feature embedded."""
import pytest
import torch

from plnlp_core.assembly import build_model, build_training_graph, parameter_groups
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.nn import EdgeLevelPredictor, GNNEncoder, NCNPredictor, NodeInput
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup, drop_edges
from plnlp_core.nn.relu_dropout import ReLUDropout
from plnlp_core.training.fitting import fit
from tests.core.test_common_neighbors import dense, random_graph, some_pairs

NUM_NODES = 30


@pytest.fixture
def graph() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Edges, their CSR adjacency and some pairs (half edges, half random)."""
    edges = random_graph(NUM_NODES, 160, 11)
    adj, _ = build_adjacency(edges, NUM_NODES)
    return edges, adj, some_pairs(edges, NUM_NODES, 11)


@pytest.mark.parametrize("xlin,tail_activation,two_layer_output",
                         [(False, False, False), (True, True, True), (True, False, True)])
def test_ncn_scores_lin_of_beta_cn_of_the_dense_common_sum_plus_ij(
        graph, xlin, tail_activation, two_layer_output):
    edges, adj, pairs = graph
    torch.manual_seed(0)
    predictor = NCNPredictor(8, 16, 0.5, xlin, tail_activation, two_layer_output, beta=0.7).eval()
    with torch.no_grad():
        predictor.beta.fill_(-1.3)  # a learnt beta, not its start
    h = torch.randn(NUM_NODES, 8)
    a = dense(edges, NUM_NODES)
    x = h + predictor.xlin(h) if xlin else h
    common = (a[pairs[:, 0]] * a[pairs[:, 1]]) @ x
    expected = predictor.lin(-1.3 * predictor.cn(common)
                             + predictor.ij(h[pairs[:, 0]] * h[pairs[:, 1]])).squeeze(-1)
    torch.testing.assert_close(predictor(h, pairs, AdjacencyLookup(adj)), expected)
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in predictor.cn) == 1
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in predictor.ij) == 1
    assert isinstance(predictor.cn[-1], ReLUDropout) == tail_activation
    assert len(predictor.lin) == (7 if two_layer_output else 4)


def test_ncn_under_bfloat16_autocast_rounds_only_the_common_neighbour_sum(graph, monkeypatch):
    import plnlp_core.nn.edge_level.ncn_predictor as ncn_predictor

    _, adj, pairs = graph
    torch.manual_seed(0)
    predictor = NCNPredictor(8, 16, xlin=True).eval()
    h = torch.randn(NUM_NODES, 8)
    seen = {}
    real_sum = ncn_predictor.common_neighbor_sum

    def spy(lookup, x, pairs, rows=None):
        seen["autocast"] = torch.is_autocast_enabled("cpu")
        seen["common"], count = real_sum(lookup, x, pairs, rows=rows)
        return seen["common"], count

    monkeypatch.setattr(ncn_predictor, "common_neighbor_sum", spy)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        got = predictor(h, pairs, AdjacencyLookup(adj))
    assert seen["autocast"] and got.dtype == torch.float32
    with torch.no_grad():
        expected = predictor.lin(predictor.beta * predictor.cn(seen["common"].float())
                                 + predictor.ij(h[pairs[:, 0]] * h[pairs[:, 1]])).squeeze(-1)
    torch.testing.assert_close(got, expected)


def test_ncn_beta_starts_where_it_is_told_and_learns(graph):
    _, adj, pairs = graph
    predictor = NCNPredictor(8, 16, beta=0.25)
    assert float(predictor.beta) == 0.25
    predictor(torch.randn(NUM_NODES, 8), pairs, AdjacencyLookup(adj)).sum().backward()
    assert predictor.beta.grad is not None and float(predictor.beta.grad) != 0.0


def test_ncn_is_symmetric_in_i_and_j(graph):
    _, adj, pairs = graph
    predictor = NCNPredictor(8, 16, xlin=True).eval()
    h, lookup = torch.randn(NUM_NODES, 8), AdjacencyLookup(adj)
    torch.testing.assert_close(predictor(h, pairs, lookup), predictor(h, pairs.flip(1), lookup))


def test_the_sum_encoder_with_residual_is_x_plus_a_x(graph):
    edges, adj, _ = graph
    x = torch.randn(NUM_NODES, 6)
    a = dense(edges, NUM_NODES)
    one = GNNEncoder("sum", 6, 6, 1, residual=True)
    assert list(one.parameters()) == []
    torch.testing.assert_close(one(x, adj), x + a @ x)
    two = GNNEncoder("sum", 6, 6, 2, residual=False)
    torch.testing.assert_close(two(x, adj), a @ (a @ x))  # NCN: nothing between pure layers
    with pytest.raises(ValueError, match="in_channels"):
        GNNEncoder("sum", 5, 6, 1)


def gcn_propagation(a: torch.Tensor) -> torch.Tensor:
    """The dense D^-1/2 (A + I) D^-1/2, D = 1 + the row sums of A."""
    norm = (1 + a.sum(1)).rsqrt()
    return norm[:, None] * (a + torch.eye(a.size(0))) * norm[None, :]


def test_the_pure_gcn_encoder_is_gcn_propagation_with_tail_dropout(graph):
    edges, adj, _ = graph
    x = torch.randn(NUM_NODES, 6)
    p = gcn_propagation(dense(edges, NUM_NODES))
    encoder = GNNEncoder("pure_gcn", 6, 6, 3, dropout=0.5, residual=True)
    assert list(encoder.parameters()) == []
    h1 = x + p @ x
    h2 = h1 + p @ h1
    torch.testing.assert_close(encoder.eval()(x, adj), h2 + p @ h2)
    torch.manual_seed(0)
    plain = GNNEncoder("pure_gcn", 6, 6, 2, dropout=0.5).train()
    out, expected = plain(x, adj), p @ (p @ x)  # dropout on the last output alone, no ReLU
    dropped = out == 0
    assert 0.3 < dropped.float().mean() < 0.7
    torch.testing.assert_close(out[~dropped], 2 * expected[~dropped])


def test_layer_norm_comes_before_each_activation(graph):
    _, adj, _ = graph
    torch.manual_seed(0)
    encoder = GNNEncoder("gcn", 4, 6, 2, layer_norm=True).eval()
    x = torch.randn(NUM_NODES, 4)
    first = encoder.norms[0](encoder.convs[0](x, adj)).relu()
    torch.testing.assert_close(encoder(x, adj), encoder.convs[1](first, adj))
    one = GNNEncoder("gcn", 4, 6, 1, activate_last_layer=True, layer_norm=True).eval()
    torch.testing.assert_close(one(x, adj), one.norms[0](one.convs[0](x, adj)).relu())
    with pytest.raises(ValueError, match="no weights"):
        GNNEncoder("sum", 6, 6, 1, layer_norm=True)


def test_encoder_edge_dropout_drops_entries_by_direction_in_training_only(graph):
    """The sum encoder of the identity is the adjacency it read: each entry
    kept at 1 / (1 - p) or dropped, each direction by itself, anew at every
    pass; evaluation reads the whole graph."""
    edges, adj, _ = graph
    a = dense(edges, NUM_NODES)
    encoder = GNNEncoder("sum", NUM_NODES, NUM_NODES, 1, edge_dropout=0.5)
    torch.manual_seed(0)
    first, second = encoder.train()(torch.eye(NUM_NODES), adj), encoder(torch.eye(NUM_NODES), adj)
    for read in (first, second):
        assert bool(((read == 0) | (read == 2)).all()) and bool((read <= 2 * a).all())
        assert 0.3 < float((read[a > 0] == 0).float().mean()) < 0.7
    assert not torch.equal(first, first.t()) and not torch.equal(first, second)
    torch.testing.assert_close(encoder.eval()(torch.eye(NUM_NODES), adj), a)
    gcn = GNNEncoder("gcn", 4, 4, 1, edge_dropout=0.5)
    assert gcn.convs[0].cached is False


@pytest.mark.parametrize("changes,sentence", [
    (dict(encoder="sum", embedding_dim=8, hidden_channels=8, encoder_layer_norm=True),
     "encoder_layer_norm acts at the encoder's ReLUs, and encoder 'sum' has no weights and no "
     "ReLU; set encoder=gcn or sage, or leave encoder_layer_norm at false."),
    (dict(encoder="pure_gcn", embedding_dim=8, hidden_channels=8, activate_last_layer=True),
     "activate_last_layer acts at the encoder's ReLUs, and encoder 'pure_gcn' has no weights "
     "and no ReLU; set encoder=gcn or sage, or leave activate_last_layer at false."),
    (dict(encoder="sage", encoder_edge_dropout=0.1),
     "encoder_edge_dropout thins each direction of an edge by itself, which encoder 'sage' "
     "cannot read (sage assumes a symmetric graph, gat ignores edge values); set encoder to one "
     "of gcn, sum, pure_gcn, or leave encoder_edge_dropout at 0."),
    (dict(encoder="gcn", encoder_edge_dropout=1.0),
     "encoder_edge_dropout must be in [0, 1), got 1.0."),
    (dict(encoder="pure_gcn", embedding_dim=8, hidden_channels=16),
     "encoder pure_gcn has no weights, so the node input's size (8) must equal hidden_channels "
     "(16); set embedding_dim to 16 with node_input=embedding, or input_projection to 16."),
])
def test_encoder_options_the_encoder_cannot_serve_are_refused(changes, sentence):
    with pytest.raises(PLNLPError) as error:
        PLNLPConfig.from_mapping(changes).validate()
    assert str(error.value) == sentence


def test_residual_adds_each_layers_input_where_the_sizes_agree(graph):
    _, adj, _ = graph
    torch.manual_seed(0)
    encoder = GNNEncoder("sage", 4, 6, 2, residual=True)
    x = torch.randn(NUM_NODES, 4)
    first = encoder.convs[0](x, adj).relu()  # 4 -> 6: no residual
    expected = first + encoder.convs[1](first, adj)
    torch.testing.assert_close(encoder(x, adj), expected)


def test_orthogonal_embeddings_have_orthonormal_columns_and_input_dropout_drops():
    torch.manual_seed(0)
    node_input = NodeInput("embedding", 50, 16, 0, init="orthogonal", dropout=0.5)
    e = node_input.embedding.weight.detach()
    torch.testing.assert_close(e.t() @ e, torch.eye(16), atol=1e-5, rtol=0)
    out = node_input(None)
    dropped = out == 0
    assert 0.3 < dropped.float().mean() < 0.7
    torch.testing.assert_close(out[~dropped], 2 * e[~dropped])
    assert torch.equal(node_input.eval()(None), node_input.embedding.weight)
    xavier = NodeInput("embedding", 50, 16, 0).embedding.weight.detach()
    assert not torch.allclose(xavier.t() @ xavier, torch.eye(16), atol=1e-2)


@pytest.mark.parametrize("kind", ["features", "both"])
def test_a_categorical_feature_is_embedded_as_its_one_hot_row_times_the_table(kind):
    """One-hot columns or one integer column: both give the table's row of
    each node's category, the one-hot row times the table."""
    torch.manual_seed(0)
    node_input = NodeInput(kind, NUM_NODES, 8, 5, init="orthogonal", num_categories=5)
    species = torch.randint(5, (NUM_NODES,))
    one_hot = torch.nn.functional.one_hot(species, 5).float()
    table = node_input.categories.weight
    expected = one_hot @ table
    if kind == "both":
        expected = torch.cat([node_input.embedding.weight, expected], dim=1)
    assert node_input.out_channels == expected.size(1)
    torch.testing.assert_close(node_input(one_hot), expected)
    integers = NodeInput(kind, NUM_NODES, 8, 1, num_categories=5)
    integers.load_state_dict(node_input.state_dict())
    torch.testing.assert_close(integers(species.float().unsqueeze(1)), expected)
    torch.testing.assert_close(table @ table.t(), torch.eye(5), atol=1e-5, rtol=0)  # C < D


@pytest.mark.parametrize("x,sentence", [
    (torch.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]),
     "node 1's feature row is not one-hot over the 3 columns feature_categories declares"),
    (torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]]),
     "node 0's feature row is not one-hot over the 3 columns feature_categories declares"),
    (torch.tensor([[0.0], [3.0]]),
     "node 1's category column holds 3, outside feature_categories' range 0..2"),
    (torch.tensor([[-1.0], [0.0]]),
     "node 0's category column holds -1, outside feature_categories' range 0..2"),
    (torch.tensor([[1.5], [0.0]]),
     "node 0's category column holds 1.5, outside feature_categories' range 0..2"),
])
def test_categorical_features_outside_the_declared_range_are_refused(x, sentence):
    node_input = NodeInput("features", 2, 4, x.size(1), num_categories=3)
    with pytest.raises(PLNLPError, match=sentence.replace(".", r"\.")):
        node_input(x)


@pytest.mark.parametrize("changes,sentence", [
    (dict(dataset="ppa", node_input="embedding", feature_categories=58),
     "feature_categories embeds the node features, which node_input embedding leaves out; set "
     "node_input=features or both, or leave feature_categories at null."),
    (dict(dataset="collab", node_input="both", feature_categories=58),
     "feature_categories 58 reads the node features as 58 one-hot columns or one integer "
     "column, and ogbl-collab has 128; set feature_categories to 128 (one-hot) or leave it at "
     "null."),
    (dict(dataset="ppa", node_input="features", feature_categories=1),
     "feature_categories must be at least 2 or null (features used raw), got 1."),
])
def test_feature_categories_the_dataset_cannot_serve_are_refused(changes, sentence):
    with pytest.raises(PLNLPError) as error:
        PLNLPConfig.from_mapping(changes).validate()
    assert str(error.value) == sentence


def test_ppa_species_embedded_size_the_encoder_input_to_embedding_dim():
    config = PLNLPConfig(dataset="ppa", node_input="features", feature_categories=58,
                         embedding_dim=16, hidden_channels=16, encoder="sum", encoder_layers=1)
    config.validate()
    model = build_model(config, DATASETS.get("ppa"), NUM_NODES)
    assert model.node_input.out_channels == 16 and model.node_input.embedding is None


def test_the_predictor_learns_at_its_own_rate():
    config = PLNLPConfig(encoder_level="edge", predictor="ncn", embedding_dim=8,
                         hidden_channels=8, predictor_hidden=8, lr=0.01, predictor_lr=0.002)
    model = build_model(config, DATASETS.get("ddi"), NUM_NODES)
    groups = parameter_groups(model, config)
    assert [g["lr"] for g in groups] == [0.01, 0.002]
    assert {id(p) for p in groups[1]["params"]} == {id(p) for p in model.predictor.parameters()}
    assert sum(len(g["params"]) for g in groups) == len(list(model.parameters()))
    assert len(parameter_groups(model, config.replace(predictor_lr=None))) == 1


@pytest.mark.parametrize("removal", [True, False])
def test_target_edge_removal_on_or_off(graph, removal):
    """Off, training scores the step's positives on the whole graph, as
    evaluation does; on, on the graph without them."""
    edges, adj, _ = graph
    config = PLNLPConfig(encoder_level="edge", predictor="ncn", embedding_dim=8,
                         hidden_channels=8, predictor_hidden=8, target_edge_removal=removal)
    torch.manual_seed(0)
    model = build_model(config, DATASETS.get("ddi"), NUM_NODES)
    pairs = edges[:10]
    trained = model.train()(None, adj, pairs)  # no dropout in this config
    evaluated = model.eval()(None, adj, pairs)
    assert torch.allclose(trained, evaluated) == (not removal)


@pytest.mark.parametrize("p", [0.0, 0.25, 0.5, 0.9])
def test_edge_dropout_drops_that_fraction_of_undirected_edges_in_both_directions(graph, p):
    edges, adj, _ = graph
    torch.manual_seed(0)
    kept = drop_edges(AdjacencyLookup(adj), p).to_dense()
    a = dense(edges, NUM_NODES)
    assert torch.equal(kept, kept.t())
    assert bool((kept <= a).all())
    assert int(a.sum() - kept.sum()) // 2 == round(p * edges.size(0))


def test_edge_dropout_thins_each_training_step_and_never_evaluation(graph):
    """Removal off, so that only the dropout changes the graph: each step
    encodes on its own thinned graph, evaluation on the whole of it."""
    edges, adj, pairs = graph
    config = PLNLPConfig(encoder_level="edge", predictor="ncn", embedding_dim=8,
                         hidden_channels=8, predictor_hidden=8, target_edge_removal=False,
                         edge_dropout=0.5)
    torch.manual_seed(0)
    model = build_model(config, DATASETS.get("ddi"), NUM_NODES)
    seen = []
    model.encoder.register_forward_hook(lambda _, inputs, __: seen.append(inputs[1]))
    model.train()(None, adj, pairs)
    model.train()(None, adj, pairs)
    evaluated = model.eval()(None, adj, pairs)
    assert [int(a._nnz()) for a in seen] == [edges.size(0), edges.size(0), 2 * edges.size(0)]
    assert not torch.equal(seen[0].to_dense(), seen[1].to_dense())
    assert seen[2] is adj
    torch.testing.assert_close(evaluated, model.score(model.encode(None, adj), pairs, adj))


def test_the_count_features_are_optional(graph):
    edges, adj, pairs = graph
    config = PLNLPConfig(encoder_level="edge", predictor="mlp", edge_counts=False)
    predictor = build_model(config, DATASETS.get("ddi"), NUM_NODES).predictor
    assert isinstance(predictor, EdgeLevelPredictor) and predictor.num_counts == 0
    assert predictor.mlp.lins[0].in_features == 2 * config.hidden_channels
    h = torch.randn(NUM_NODES, config.hidden_channels)
    a = dense(edges, NUM_NODES)
    features = torch.cat([h[pairs[:, 0]] * h[pairs[:, 1]],
                          (a[pairs[:, 0]] * a[pairs[:, 1]]) @ h], dim=1)
    torch.testing.assert_close(predictor(h, pairs, AdjacencyLookup(adj)),
                               predictor.mlp(features).squeeze(-1))
    with_counts = build_model(config.replace(edge_counts=None), DATASETS.get("ddi"), NUM_NODES)
    assert with_counts.predictor.num_counts == 3


def test_ncn_with_its_ddi_options_fits_the_ddi_standin_with_two_learning_rates(ddi_standin_split):
    """NCN's ddi recipe (sum encoder with residual, orthogonal embedding,
    input dropout, xlin, two-layer output, BCE), at the stand-in's sizes:
    the loss falls and the predictor moved at its own rate."""
    split = ddi_standin_split
    config = PLNLPConfig(
        encoder="sum", embedding_dim=16, embedding_init="orthogonal", input_dropout=0.1,
        hidden_channels=16, encoder_layers=1, encoder_residual=True, encoder_level="edge",
        predictor="ncn", predictor_hidden=16, ncn_xlin=True, ncn_two_layer_output=True,
        loss="ce", num_neg=1, negatives="independent", lr=0.02, predictor_lr=0.01, epochs=6,
        batch_size=64, eval_every=6)
    config.validate()
    torch.manual_seed(0)
    model = build_model(config, split.info, split.num_nodes)
    result = fit(model, config, split, build_training_graph(split, config))
    losses = [epoch.train_loss for epoch in result.history]
    assert sum(losses[-2:]) < 0.95 * sum(losses[:2])
    assert {"valid_hits_20", "test_hits_20"} <= set(result.best_metrics)
