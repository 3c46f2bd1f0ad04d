"""The edge level: common neighbours and paths of length 3 against dense
references, target-link removal, and the edge-level model training."""
import pytest
import torch

from plnlp_core.assembly import build_model, build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.nn import EdgeLevelModel
from plnlp_core.nn.edge_level import common_neighbors, intersection
from plnlp_core.nn.edge_level.bit_rows import BitRows, dense_common_neighbor_sum
from plnlp_core.nn.edge_level.common_neighbors import (
    AdjacencyLookup,
    common_neighbor_sum,
    dense_is_cheaper,
    path3_counts,
    remove_edges,
    summing_way,
)
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import StepOptions, draw_batch, train_step
from plnlp_core.training.fitting import fit


def random_graph(num_nodes: int, num_edges: int, seed: int) -> torch.Tensor:
    """Distinct undirected edges without self-loops, shape ``[E, 2]``."""
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(num_nodes, (num_edges * 3, 2), generator=g)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]].sort(dim=1).values.unique(dim=0)
    return pairs[torch.randperm(pairs.size(0), generator=g)[:num_edges]]


def dense(edges: torch.Tensor, num_nodes: int) -> torch.Tensor:
    a = torch.zeros(num_nodes, num_nodes)
    a[edges[:, 0], edges[:, 1]] = 1
    a[edges[:, 1], edges[:, 0]] = 1
    return a


def exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` in fp64, rounded to fp32 once: the reference of sums that
    may be more exact than fp32's own product (on int8 digits)."""
    return (a.double() @ b.double()).float()


def assert_sum_close(actual: torch.Tensor, mask: torch.Tensor, b: torch.Tensor) -> None:
    """``actual`` is the 0/1 ``mask`` times ``b`` to within what its sums may
    round: :math:`n u (\\sum_k |b_k| + \\max |b|)` for :math:`n` terms,
    :math:`u = 2^{-24}` and the largest entry of ``b``'s column. fp32 sums
    in any order of their additions stay within :math:`n u \\sum_k |b_k|`
    (Higham's bound; the result's own rounding counted as one more term);
    int8 digits write each entry to within :math:`2^{-30}` of its column's
    largest. The same sums round differently in another order (another CPU's
    kernel, the sparse backward's threads): torch's fixed fp32 tolerance
    (1e-5 absolute) once failed one gradient entry of the fp32 dense rows by
    5 %, with weights drawn from the generator the tests before had left."""
    mask, b = mask.double(), b.double()
    terms = int(mask.sum(1).max()) + 1
    bound = terms * 2**-24 * (mask @ b.abs() + b.abs().amax(0))
    assert ((actual.double() - mask @ b).abs() <= bound).all()


def some_pairs(edges: torch.Tensor, num_nodes: int, seed: int) -> torch.Tensor:
    """Half of the edges and as many random pairs (self pairs excluded)."""
    g = torch.Generator().manual_seed(seed)
    random = torch.randint(num_nodes, (edges.size(0), 2), generator=g)
    random = random[random[:, 0] != random[:, 1]]
    return torch.cat([edges[: edges.size(0) // 2], random])


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 12, 30), (1, 40, 200), (2, 70, 150),
                                                      (3, 30, 300)])
@pytest.mark.parametrize("max_candidates,dense_row_cost", [(7, 0), (2**22, 0), (2**22, 10**9)])
def test_common_neighbour_sum_equals_the_dense_a_times_a_reference(
        seed, num_nodes, num_edges, max_candidates, dense_row_cost, monkeypatch):
    """Both ways, the CSR walk (in chunks of 7 tests or all at once) and the
    dense rows (in fp32, or on int8 digits), give the reference's sums,
    counts and gradients, to within fp32's rounding of the sums."""
    monkeypatch.setattr("plnlp_core.nn.edge_level.common_neighbors.DENSE_ROW_COST", dense_row_cost)
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    pairs = some_pairs(edges, num_nodes, seed)
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(num_nodes, 5, generator=generator, requires_grad=True)
    total, count = common_neighbor_sum(AdjacencyLookup(adj), h, pairs, max_candidates)
    a = dense(edges, num_nodes)
    mask = a[pairs[:, 0]] * a[pairs[:, 1]]  # row t: indicator of N(i_t) ∩ N(j_t)
    assert_sum_close(total, mask, h)
    torch.testing.assert_close(count, mask.sum(1).long())
    weights = torch.randn(total.shape, generator=generator)
    grad, = torch.autograd.grad((total * weights).sum(), h)
    assert_sum_close(grad, mask.t(), weights)


def test_the_sparse_lookup_of_large_graphs_agrees_with_the_dense_table(monkeypatch):
    edges = random_graph(50, 300, 4)
    adj, _ = build_adjacency(edges, 50)
    pairs = some_pairs(edges, 50, 4)
    h = torch.randn(50, 3)
    dense_table = common_neighbor_sum(AdjacencyLookup(adj), h, pairs)
    monkeypatch.setattr("plnlp_core.edge_set.EdgeSet.DENSE_LIMIT", 0)
    lookup = AdjacencyLookup(adj)
    assert lookup.table is None
    sparse_keys = common_neighbor_sum(lookup, h, pairs)
    torch.testing.assert_close(dense_table, sparse_keys)


def test_training_removes_the_target_edges_before_the_aggregate():
    """For a batch of positives P, the aggregate is (A - P) ⊙ (A - P)
    products: no pair sees an edge of the batch, nor its own."""
    num_nodes = 40
    edges = random_graph(num_nodes, 220, 5)
    adj, _ = build_adjacency(edges, num_nodes)
    batch = edges[:30]
    pairs = torch.cat([batch, random_graph(num_nodes, 20, 6)])
    pairs = pairs[~AdjacencyLookup(adj).contains(pairs[:, 0], pairs[:, 1]) | (
        torch.arange(pairs.size(0)) < 30)]  # the batch's positives and true non-edges
    reduced = remove_edges(AdjacencyLookup(adj), pairs)
    a = dense(edges, num_nodes) - dense(batch, num_nodes)
    torch.testing.assert_close(reduced.to_dense(), a)
    h = torch.randn(num_nodes, 4, generator=torch.Generator().manual_seed(5))
    total, count = common_neighbor_sum(AdjacencyLookup(reduced), h, pairs)
    mask = a[pairs[:, 0]] * a[pairs[:, 1]]
    assert_sum_close(total, mask, h)
    torch.testing.assert_close(count, mask.sum(1).long())


@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 15, 30), (1, 40, 120), (2, 25, 150)])
def test_path3_counts_equal_a_cubed_on_non_edges_and_paths_on_edges(seed, num_nodes, num_edges):
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    pairs = some_pairs(edges, num_nodes, seed)
    a = dense(edges, num_nodes)
    i, j = pairs[:, 0], pairs[:, 1]
    walks = a[i][:, :, None] * a[None] * a[:, j].t()[:, None, :]  # [t, k, m]: i-k-m-j
    t = torch.arange(pairs.size(0))
    walks[t, j, :] = 0  # k = j
    walks[t, :, i] = 0  # m = i (k = m never: no self-loops)
    expected = walks.sum(dim=(1, 2))  # simple paths i-k-m-j
    for max_candidates in (5, 2**22):
        torch.testing.assert_close(path3_counts(AdjacencyLookup(adj), pairs, max_candidates),
                                   expected)
    non_edges = a[i, j] == 0
    torch.testing.assert_close(expected[non_edges], (a @ a @ a)[i, j][non_edges])


SMALL = dict(embedding_dim=16, hidden_channels=16, predictor_hidden=16, predictor="mlp",
             encoder_level="edge", epochs=6, batch_size=64, lr=0.02, num_neg=2,
             eval_batch_size=1024)


@pytest.mark.parametrize("path_length", [2, 3])
def test_an_edge_level_model_lowers_its_loss_on_a_tiny_graph(path_length):
    torch.manual_seed(0)
    num_nodes = 30
    edges = random_graph(num_nodes, 120, 7)
    adj, _ = build_adjacency(edges, num_nodes)
    config = PLNLPConfig.from_mapping({**SMALL, "edge_path_length": path_length})
    model = build_model(config, DATASETS.get("ddi"), num_nodes)
    assert isinstance(model, EdgeLevelModel)
    from plnlp_core.edge_set import EdgeSet
    from plnlp_core.sampling import SAMPLERS

    sampler = SAMPLERS.get("global")(EdgeSet(edges, num_nodes, True))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    options = StepOptions.from_config(config)
    g = torch.Generator().manual_seed(0)
    model.train()
    losses = [float(train_step(model, optimizer, None, adj,
                               draw_batch(edges[:40], None, sampler, 2, "shared", g),
                               options).loss)
              for _ in range(50)]
    assert sum(losses[-5:]) < 0.7 * sum(losses[:5])


def test_the_edge_level_scores_pairs_on_the_graph_it_is_given():
    """In training the step's edges leave the graph; in evaluation nothing does."""
    num_nodes = 20
    edges = random_graph(num_nodes, 60, 8)
    adj, _ = build_adjacency(edges, num_nodes)
    config = PLNLPConfig.from_mapping(SMALL)
    model = build_model(config, DATASETS.get("ddi"), num_nodes)
    model.eval()
    with torch.no_grad():
        h = model.encode(None, adj)
        full = model.score(h, edges, adj)
        reduced = remove_edges(AdjacencyLookup(adj), edges[:10])
        seen = model.score(model.encode(None, reduced), edges, reduced)
        forward = model(None, adj, edges)
    torch.testing.assert_close(forward, full)
    assert not torch.allclose(full, seen)
    with pytest.raises(TypeError):
        model.score(h, edges)


def test_edge_level_fit_on_the_ddi_standin_lowers_the_loss_and_evaluates(ddi_standin_split):
    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "epochs": 8})
    config.validate()
    torch.manual_seed(0)
    model = build_model(config, split.info, split.num_nodes)
    graph = build_training_graph(split, config)
    result = fit(model, config, split, graph)
    losses = [epoch.train_loss for epoch in result.history]
    # a random stand-in with a fifth of its edges out of each step's graph: a slow fall
    assert sum(losses[-2:]) < 0.95 * sum(losses[:2])
    assert {"valid_hits_20", "test_hits_20"} <= set(result.best_metrics)
    model.load_state_dict(result.best_state)
    eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                   "test": (split.test_pos, split.test_neg)}
    again = evaluate(model, split.info, split.x, graph.adj, eval_splits, 7)  # other chunks
    assert again == pytest.approx(result.best_metrics)


@pytest.mark.parametrize("changes,sentence", [
    (dict(encoder_level="edge", predictor="dot"),
     "encoder_level edge scores pairs with an edge-level predictor, so predictor 'dot' cannot "
     "serve it; set predictor=mlp or ncn."),
    (dict(predictor="ncn"),
     "predictor 'ncn' reads the pair's common neighbours, which only encoder_level edge gives; "
     "set encoder_level=edge."),
    (dict(target_edge_removal=False),
     "target_edge_removal applies to encoder_level edge only; set encoder_level=edge or leave "
     "target_edge_removal at true."),
    (dict(edge_dropout=0.1),
     "edge_dropout applies to encoder_level edge only; set encoder_level=edge or leave "
     "edge_dropout at 0.0."),
    (dict(encoder_level="edge", predictor="ncn", edge_dropout=1.0),
     "edge_dropout must be in [0, 1), got 1.0."),
    (dict(predictor="mlp", edge_counts=False),
     "edge_counts applies to encoder_level edge only; set encoder_level=edge or leave "
     "edge_counts at null."),
    (dict(encoder_level="edge", predictor="mlp", ncn_xlin=True),
     "ncn_xlin applies to predictor ncn only; set predictor=ncn or leave ncn_xlin at false."),
    (dict(encoder_level="edge", predictor="ncn", edge_counts=True),
     "edge_counts and edge_path_length 3 add count features to predictor mlp, and predictor ncn "
     "has none; set predictor=mlp, or leave edge_counts unset and edge_path_length at 2."),
    (dict(encoder="sum", embedding_dim=32, hidden_channels=64),
     "encoder sum has no weights, so the node input's size (32) must equal hidden_channels (64); "
     "set embedding_dim to 64 with node_input=embedding, or input_projection to 64."),
    (dict(encoder_level="edge", predictor="mlp", edge_path_length=4),
     "edge_path_length must be 2 (common neighbours) or 3 (also paths of length 3), got 4."),
    (dict(edge_path_length=3),
     "edge_path_length applies to encoder_level edge only; set encoder_level=edge or leave "
     "edge_path_length at 2."),
    (dict(encoder_level="pair"), "unknown encoder_level 'pair'; choose one of: edge, node."),
    (dict(dataset="citation2", encoder_level="edge", predictor="mlp"),
     "encoder_level edge is symmetric in i and j (common neighbours in the undirected graph) but "
     "ogbl-citation2 is directed; set force_symmetric_predictor=true to use it anyway."),
])
def test_edge_level_settings_it_cannot_serve_are_refused(changes, sentence):
    with pytest.raises(PLNLPError) as error:
        PLNLPConfig.from_mapping(changes).validate()
    assert str(error.value) == sentence


def test_a_step_ranking_most_of_the_graph_scores_groups_on_graphs_without_their_edges():
    num_nodes = 30
    edges = random_graph(num_nodes, 100, 9)
    adj, _ = build_adjacency(edges, num_nodes)
    model = build_model(PLNLPConfig.from_mapping(SMALL), DATASETS.get("ddi"), num_nodes)
    lookup = model.lookup(adj)
    pairs = torch.cat([edges, random_graph(num_nodes, 300, 10)])
    pairs = pairs[(torch.arange(pairs.size(0)) < 100) | ~lookup.contains(pairs[:, 0], pairs[:, 1])]
    groups = model.removal_groups(lookup, pairs)
    assert len(groups) == 7  # 100 edges, at most 15 out of each graph
    assert torch.equal(torch.cat(groups).sort().values, torch.arange(pairs.size(0)))
    for index in groups:
        assert lookup.contains(pairs[index, 0], pairs[index, 1]).sum() <= 15
    model.train()
    torch.manual_seed(0)
    scores = model(None, adj, pairs)
    assert scores.shape == (pairs.size(0),)
    model.predictor.mlp.dropout = 0.0  # no randomness: group by group gives the same scores
    model.encoder.dropout = 0.0
    scores = model(None, adj, pairs)
    for index in groups:
        reduced = remove_edges(lookup, pairs[index])
        alone = model.predictor(model.encode(None, reduced), pairs[index], AdjacencyLookup(reduced))
        torch.testing.assert_close(scores[index], alone)


@pytest.mark.parametrize(("limit", "count"), [(1.0, 1), (0.5, 2), (0.05, 20)])
def test_target_removal_limit_sets_how_many_groups_a_step_is_scored_in(limit, count):
    num_nodes = 30
    edges = random_graph(num_nodes, 100, 9)
    adj, _ = build_adjacency(edges, num_nodes)
    config = PLNLPConfig.from_mapping({**SMALL, "target_removal_limit": limit})
    model = build_model(config, DATASETS.get("ddi"), num_nodes)
    groups = model.removal_groups(model.lookup(adj), edges)
    assert len(groups) == count  # 100 edges, at most 100 * limit out of each graph
    assert torch.equal(torch.cat(groups).sort().values, torch.arange(edges.size(0)))


@pytest.mark.parametrize("limit", [0.0, 1.5])
def test_a_target_removal_limit_outside_its_range_is_refused(limit):
    with pytest.raises(PLNLPError, match=r"target_removal_limit must be in \(0, 1\]"):
        PLNLPConfig.from_mapping({**SMALL, "target_removal_limit": limit}).validate()


@pytest.mark.parametrize("changes", [
    *({"loss": loss} for loss in ("auc", "hinge_auc", "weighted_hinge_auc", "ce", "log_rank")),
    {"sampler": "local", "negatives": "independent"},
    {"loss": "weighted_hinge_auc", "walk_length": 3},
    {"walk_length": 2, "walk_positives": "walks"},
    {"precision": "bf16"},
    {"encoder": "gcn"},
    {"encoder": "none"},
])
def test_the_edge_level_trains_with_every_loss_sampler_negative_mode_and_walks(
        ddi_standin_split, changes):
    from plnlp_core.assembly import build_walk_rounds

    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "epochs": 2, **changes})
    config.validate()
    torch.manual_seed(0)
    model = build_model(config, split.info, split.num_nodes)
    assert not any(getattr(conv, "cached", False) for conv in model.encoder.convs)
    walks = build_walk_rounds(split, config) if config.uses_random_walk else None
    result = fit(model, config, split, build_training_graph(split, config, walks))
    assert all(torch.isfinite(torch.tensor(e.train_loss)) for e in result.history)
    assert 0.0 <= result.best_metrics["test_hits_20"] <= 1.0


@pytest.mark.parametrize("memory_share", [0.0, 0.25])
def test_the_bit_rows_product_equals_the_dense_reference_kept_or_made_again(
        memory_share, monkeypatch):
    """With no memory to spare each row is a chunk made again in the
    backward; with memory the chunks are kept: both give the reference (the
    products in floats; on int8 digits: tests/core/test_fixed_point.py)."""
    monkeypatch.setattr("plnlp_core.nn.edge_level.bit_rows.MASK_MEMORY_SHARE", memory_share)
    monkeypatch.setattr("plnlp_core.nn.edge_level.bit_rows.int8_products", lambda device: False)
    edges = random_graph(37, 250, 7)  # 37 nodes: the last byte of a row is part padding
    adj, _ = build_adjacency(edges, 37)
    pairs = some_pairs(edges, 37, 7)
    generator = torch.Generator().manual_seed(7)
    h = torch.randn(37, 6, generator=generator, requires_grad=True)
    total, count = dense_common_neighbor_sum(BitRows(AdjacencyLookup(adj).dense()), h, pairs)
    mask = dense(edges, 37)[pairs[:, 0]] * dense(edges, 37)[pairs[:, 1]]
    assert_sum_close(total, mask, h)
    torch.testing.assert_close(count, mask.sum(1).long())
    weights = torch.randn(total.shape, generator=generator)
    grad, = torch.autograd.grad((total * weights).sum(), h)
    assert_sum_close(grad, mask.t(), weights)


def test_under_bfloat16_autocast_the_dense_product_runs_in_bfloat16_with_exact_rows(monkeypatch):
    """The 0/1 rows are exact in bfloat16: on integer vectors the sums are
    exact below 256; fp32 outside autocast. (The dense way, as on a CPU
    with int8 matrix units.)"""
    monkeypatch.setattr(common_neighbors, "int8_products", lambda device: True)
    edges = random_graph(60, 900, 8)
    adj, _ = build_adjacency(edges, 60)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 60, 8)
    h = torch.randint(-3, 4, (60, 4)).float()
    mask = dense(edges, 60)[pairs[:, 0]] * dense(edges, 60)[pairs[:, 1]]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert dense_is_cheaper(lookup, pairs)
        total, count = common_neighbor_sum(lookup, h, pairs)
    assert total.dtype == torch.float32
    torch.testing.assert_close(total, mask @ h, rtol=0, atol=0)
    torch.testing.assert_close(count, mask.sum(1).long())
    h = torch.rand(60, 4) + 1.0  # not representable in bfloat16: rounded, about 2**-8
    with torch.autocast("cpu", dtype=torch.bfloat16):
        total, _ = common_neighbor_sum(lookup, h, pairs)
    assert not torch.equal(total, mask @ h)
    torch.testing.assert_close(total, mask @ h, rtol=2**-7, atol=0)


def test_without_int8_units_a_cpu_sums_lists_exactly_in_fp32_under_bfloat16_too(monkeypatch):
    """Where bfloat16 is not native, the lists' sums stay fp32: the same
    as the fp32 reference, forward and backward, under autocast too."""
    monkeypatch.setattr(common_neighbors, "int8_products", lambda device: False)
    edges = random_graph(60, 900, 8)
    adj, _ = build_adjacency(edges, 60)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 60, 8)
    assert dense_is_cheaper(lookup, pairs) and summing_way(lookup, pairs) == "lists"
    h = (torch.rand(60, 4) + 1.0).requires_grad_()
    mask = dense(edges, 60)[pairs[:, 0]] * dense(edges, 60)[pairs[:, 1]]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        total, count = common_neighbor_sum(lookup, h, pairs)
    assert total.dtype == torch.float32
    torch.testing.assert_close(total, mask @ h.detach())
    torch.testing.assert_close(count, mask.sum(1).long())
    weights = torch.randn(total.shape)
    grad, = torch.autograd.grad((total * weights).sum(), h)
    torch.testing.assert_close(grad, mask.t() @ weights)


def test_a_row_wise_map_of_the_named_rows_alone_sums_and_steps_as_of_every_row():
    """NCN's xlin reads only the common neighbours' rows: on a sparse graph
    the lists name few of them, and the sums and the gradients (of the node
    vectors and of the map's weights) are those of the map of every row."""
    edges = random_graph(400, 300, 5)
    adj, _ = build_adjacency(edges, 400)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 400, 5)
    torch.manual_seed(0)
    layer = torch.nn.Linear(6, 6)
    h = torch.randn(400, 6, requires_grad=True)

    def rows(x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(layer(x))

    lists = common_neighbors.cpu_common_neighbor_lists(lookup, pairs)
    assert lists.named_rows(400)[0].numel() < 100  # a few rows of 400
    total, count = common_neighbor_sum(lookup, h, pairs, rows=rows)
    mask = dense(edges, 400)[pairs[:, 0]] * dense(edges, 400)[pairs[:, 1]]
    reference = mask @ rows(h)
    torch.testing.assert_close(total, reference)
    weights = torch.randn(total.shape)
    got = torch.autograd.grad((total * weights).sum(), [h, layer.weight])
    expected = torch.autograd.grad((reference * weights).sum(), [h, layer.weight])
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b)


def test_the_lists_backward_repeats_to_the_digit_on_any_number_of_threads(monkeypatch):
    """Each channel's gradient is added in the pairs' order by one thread
    (the loops run in parallel from the first pair here)."""
    monkeypatch.setattr(intersection, "PARALLEL_PAIRS", 0)
    edges = random_graph(300, 6000, 6)
    adj, _ = build_adjacency(edges, 300)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 300, 6)
    h = torch.randn(300, 96, requires_grad=True)
    weights = torch.randn(pairs.size(0), 96)
    threads = torch.get_num_threads()
    grads = []
    try:
        for count in (1, 2, 3):
            torch.set_num_threads(count)
            total = common_neighbors.cpu_common_neighbor_lists(lookup, pairs).sum(h)
            grads.append(torch.autograd.grad((total * weights).sum(), h)[0])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(grads[0], grads[1]) and torch.equal(grads[0], grads[2])
    mask = dense(edges, 300)[pairs[:, 0]] * dense(edges, 300)[pairs[:, 1]]
    torch.testing.assert_close(grads[0], mask.t() @ weights, rtol=1e-5, atol=1e-4)


def test_a_cpu_chunk_of_rows_is_a_quarter_of_the_last_level_cache_at_most_8_mib(tmp_path):
    from plnlp_core.nn.edge_level.bit_rows import chunk_bytes, last_level_cache_bytes

    for index, size in enumerate(["48K", "1024K", "32768K"]):
        (tmp_path / f"index{index}").mkdir()
        (tmp_path / f"index{index}" / "size").write_text(size + "\n")
    assert last_level_cache_bytes(tmp_path) == 32 * 2**20
    assert last_level_cache_bytes(tmp_path / "missing") == 32 * 2**20  # the assumed size
    assert chunk_bytes(torch.device("cpu")) == min(last_level_cache_bytes() // 4, 8 * 2**20)
