"""Neighbour-sampled training (``fanouts``): the sampler draws real
neighbours, at most the fanout, seeded; with fanouts at least the largest
degree a sampled step is the full-batch step; a sampled fit trains."""
import copy

import pytest
import torch

from plnlp_core.assembly import build_model, build_optimizer, build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.losses import LOSSES
from plnlp_core.sampling.neighbors import NeighborSampler, sample_pairs
from plnlp_core.sparse_adam import DenseAndSparseAdam, RowAdam
from plnlp_core.training.epoch import PairBatch, StepOptions, sampled_batch, train_step
from tests.core.test_training import small_fit


def power_law_adjacency(num_nodes: int = 300, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    weights = torch.arange(1, num_nodes + 1, dtype=torch.float).pow(-0.8)
    src = torch.multinomial(weights, 4 * num_nodes, replacement=True, generator=generator)
    dst = torch.randint(num_nodes, (4 * num_nodes,), generator=generator)
    keep = src != dst
    return build_adjacency(torch.stack([src[keep], dst[keep]], dim=1), num_nodes)[0]


def neighbor_sets(adj: torch.Tensor) -> list[set[int]]:
    crow, col = adj.crow_indices().tolist(), adj.col_indices().tolist()
    return [set(col[crow[v]:crow[v + 1]]) for v in range(adj.size(0))]


def test_sampling_draws_only_real_neighbours_at_most_the_fanout():
    adj = power_law_adjacency()
    neighbours = neighbor_sets(adj)
    sampler = NeighborSampler(adj, [5, 3])
    seeds = torch.tensor([0, 1, 2, 50, 299])
    sub = sampler.sample(seeds, torch.Generator().manual_seed(1))
    assert torch.equal(sub.nodes[:5], seeds) and sub.num_seeds == 5
    assert sub.nodes.unique().numel() == sub.nodes.numel()
    src, dst = sub.nodes[sub.edge_index[0]].tolist(), sub.nodes[sub.edge_index[1]].tolist()
    drawn: dict[int, set[int]] = {}
    for s, d in zip(src, dst, strict=True):
        assert s in neighbours[d], f"{s} is no neighbour of {d}"
        drawn.setdefault(d, set()).add(s)
    hop_one = {int(v) for v in seeds}
    for node, got in drawn.items():
        fanout = 5 if node in hop_one else 3
        assert len(got) <= fanout
        if len(neighbours[node]) <= fanout:
            assert got == neighbours[node]  # a node of small degree keeps them all
    assert max(len(neighbours[v]) for v in drawn) > 5  # the cap was tested
    assert len(src) == len(set(zip(src, dst, strict=True)))  # no edge twice


def test_sampling_is_seeded():
    adj = power_law_adjacency()
    sampler = NeighborSampler(adj, [4, 4])
    seeds = torch.arange(0, 300, 7)
    first = sampler.sample(seeds, torch.Generator().manual_seed(3))
    again = sampler.sample(seeds, torch.Generator().manual_seed(3))
    other = sampler.sample(seeds, torch.Generator().manual_seed(4))
    assert torch.equal(first.nodes, again.nodes)
    assert torch.equal(first.edge_index, again.edge_index)
    assert not torch.equal(first.edge_index, other.edge_index)


@pytest.mark.parametrize("encoder", ["sage", "gat"])
def test_a_step_with_fanouts_past_the_largest_degree_is_the_full_batch_step(encoder):
    adj = power_law_adjacency(120)
    max_degree = int((adj.crow_indices()[1:] - adj.crow_indices()[:-1]).max())
    settings = dict(encoder=encoder, embedding_dim=8, hidden_channels=8, predictor="mlp",
                    predictor_hidden=8, loss="hinge_auc", num_neg=2, l2=0.001)
    full = build_model(PLNLPConfig(**settings), DATASETS.get("ddi"), 120)
    config = PLNLPConfig(**settings, fanouts=(max_degree, max_degree))
    sampled = build_model(config, DATASETS.get("ddi"), 120)
    sampled.load_state_dict(copy.deepcopy(full.state_dict()))
    generator = torch.Generator().manual_seed(0)
    pos, neg = torch.randint(120, (12, 2), generator=generator), \
        torch.randint(120, (12, 2), generator=generator)
    index = torch.stack([torch.arange(12), torch.randperm(12, generator=generator)], dim=1)
    batch = PairBatch(pos, None, neg, index)
    options = StepOptions(LOSSES.get("hinge_auc"), num_neg=2, l2=0.001)
    # l2 off here: the full step penalises the whole table, the sampled its rows
    losses, grads = [], []
    for model, graph_batch in (
            (full, (adj, batch)),
            (sampled, sampled_batch(batch, NeighborSampler(adj, [max_degree] * 2), generator)
             [::-1])):
        graph, step_batch = graph_batch
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        stats = train_step(model, optimizer, None, graph,
                           step_batch, StepOptions(options.loss_fn, 2))
        losses.append(float(stats.loss))
        grads.append({name: p.grad.to_dense() for name, p in model.named_parameters()})
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    for name, grad in grads[0].items():
        torch.testing.assert_close(grads[1][name], grad, rtol=1e-4, atol=1e-6, msg=name)


def test_a_sampled_model_steps_its_embedding_rows_sparsely():
    adj = power_law_adjacency(200)
    config = PLNLPConfig(embedding_dim=8, hidden_channels=8, fanouts=(3, 2), l2=0.01)
    model = build_model(config, DATASETS.get("ddi"), 200)
    optimizer = build_optimizer(model, config)
    assert isinstance(optimizer, DenseAndSparseAdam)
    before = model.node_input.embedding.weight.detach().clone()
    pairs = torch.tensor([[0, 1], [2, 3], [4, 5]])
    sub, local = sample_pairs(NeighborSampler(adj, [3, 2]), pairs, torch.Generator())
    batch = PairBatch(local[:2], None, local[2:], torch.tensor([[0], [0]]))
    train_step(model, optimizer, None, sub, batch,
               StepOptions(LOSSES.get("auc"), num_neg=1, l2=0.01))
    assert model.node_input.embedding.weight.grad.is_sparse
    changed = (model.node_input.embedding.weight.detach() != before).any(dim=1)
    touched = torch.zeros(200, dtype=torch.bool)
    touched[sub.nodes] = True
    assert changed.any() and not (changed & ~touched).any()
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 0.5)
    schedule.step()
    assert {g["lr"] for g in optimizer.sparse.param_groups} == {0.5 * config.lr}
    restored = build_optimizer(model, config)
    restored.load_state_dict(optimizer.state_dict())
    assert restored.state_dict()["sparse"]["state"].keys() == \
        optimizer.state_dict()["sparse"]["state"].keys()


@pytest.mark.parametrize("encoder,sampler", [("sage", "global"), ("gcn", "local"),
                                             ("gat", "hard")])
def test_a_sampled_fit_trains_with_each_encoder_and_sampler(ddi_standin_split, encoder,
                                                            sampler):
    _, config, result = small_fit(ddi_standin_split, encoder=encoder, sampler=sampler,
                                  fanouts=[5, 5], epochs=6)
    losses = [epoch.train_loss for epoch in result.history]
    assert sum(losses[-2:]) < sum(losses[:2])
    assert 0.0 <= result.best_metrics["test_hits_20"] <= 1.0


def test_fanouts_are_refused_when_they_cannot_be_sampled():
    for settings, words in (({"fanouts": [10]}, "1 entries for 2 encoder layers"),
                            ({"fanouts": [10, 0]}, "positive neighbour counts"),
                            ({"fanouts": [3, 3], "encoder_level": "edge", "predictor": "mlp"},
                             "encoder_level 'edge'"),
                            ({"fanouts": [3, 3], "encoder_edge_dropout": 0.1, "encoder": "gcn"},
                             "encoder_edge_dropout"),
                            ({"fanouts": "15,10"}, "a list of integers")):
        with pytest.raises(PLNLPError, match=words):
            PLNLPConfig.from_mapping(settings).validate()


def test_the_training_graph_of_a_sampled_config_is_the_full_one(ddi_standin_split):
    config = PLNLPConfig(fanouts=(4, 4))
    graph = build_training_graph(ddi_standin_split, config)
    assert graph.adj.size(0) == ddi_standin_split.num_nodes


def test_row_adam_steps_as_torch_s_sparse_adam_does():
    torch.manual_seed(0)
    ours, theirs = torch.nn.Embedding(50, 4, sparse=True), torch.nn.Embedding(50, 4, sparse=True)
    theirs.load_state_dict(ours.state_dict())
    row_adam = RowAdam([ours.weight], lr=0.05)
    sparse_adam = torch.optim.SparseAdam([theirs.weight], lr=0.05)
    for step in range(4):
        rows = torch.tensor([3, 7, 7, 11, step, 40])  # a row read twice: an uncoalesced gradient
        for table, optimizer in ((ours, row_adam), (theirs, sparse_adam)):
            optimizer.zero_grad()
            (table(rows) * torch.arange(4.0)).square().sum().backward()
            optimizer.step()
    torch.testing.assert_close(ours.weight, theirs.weight, rtol=1e-5, atol=1e-7)
    assert row_adam.state[ours.weight]["step"] == 4
    untouched = [r for r in range(50) if r not in (0, 1, 2, 3, 7, 11, 40)]
    assert torch.equal(row_adam.state[ours.weight]["exp_avg"][untouched],
                       torch.zeros(len(untouched), 4))


def test_a_sampled_step_reads_its_nodes_input_rows_alone():
    from plnlp_core.nn.node_input import NodeInput

    node_input = NodeInput("both", 30, 4, 3, sparse=True)
    x = torch.randn(30, 3)
    nodes = torch.tensor([5, 0, 29, 7])
    torch.testing.assert_close(node_input(x, nodes), node_input(x)[nodes])
    node_input(x, nodes).sum().backward()
    grad = node_input.embedding.weight.grad
    assert grad.is_sparse and set(grad.coalesce().indices()[0].tolist()) == {0, 5, 7, 29}


def test_sampled_steps_on_a_cpu_read_features_where_they_are(ddi_standin_split):
    from plnlp_core.training.fitting import step_features

    x = torch.randn(4, 2)
    config = PLNLPConfig(fanouts=(3, 3))
    assert step_features(x, config, torch.device("cpu")) is x
