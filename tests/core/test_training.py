"""Training: train_step, train_epoch and experiment.fit on the ddi stand-in."""
import pytest
import torch

from plnlp_core.config import PLNLPConfig
from plnlp_core.evaluation import evaluate
from plnlp_core.experiment import build_model, build_training_graph, fit
from plnlp_core.losses import LOSSES
from plnlp_core.training import PairBatch, draw_batch, train_step

SMALL = dict(embedding_dim=16, hidden_channels=16, predictor_hidden=16, epochs=8,
             batch_size=64, lr=0.02, num_neg=2, eval_batch_size=1024)


def small_fit(split, **changes):
    config = PLNLPConfig.from_mapping({**SMALL, **changes})
    config.validate()
    torch.manual_seed(config.seed)
    model = build_model(config, split.info, split.num_nodes)
    graph = build_training_graph(split, config)
    return model, config, fit(model, config, split, graph)


def test_fit_lowers_the_training_loss_on_the_standin(ddi_standin_split):
    _, _, result = small_fit(ddi_standin_split)
    losses = [epoch.train_loss for epoch in result.history]
    assert len(losses) == SMALL["epochs"]
    # one epoch is noisy (fresh negatives each time): compare the first two
    # epochs with the last two; at lr 0.02 the loss drops by about a fifth
    assert sum(losses[-2:]) < 0.9 * sum(losses[:2])


def test_fit_returns_best_epoch_and_metrics_of_valid_and_test(ddi_standin_split):
    _, _, result = small_fit(ddi_standin_split, epochs=3)
    assert 1 <= result.best_epoch <= 3
    assert set(result.best_metrics) == {
        f"{split}_hits_{k}" for split in ("valid", "test") for k in (20, 50, 100)}
    assert all(0.0 <= v <= 1.0 for v in result.best_metrics.values())


def test_fit_chooses_the_best_epoch_by_validation(ddi_standin_split):
    model, config, result = small_fit(ddi_standin_split, eval_every=1)
    evaluated = [e for e in result.history if e.metrics]
    best = max(evaluated, key=lambda e: e.metrics["valid_hits_20"])
    assert result.best_epoch == best.epoch
    assert result.best_metrics == best.metrics


def test_fit_best_state_reproduces_the_best_metrics(ddi_standin_split):
    split = ddi_standin_split
    model, config, result = small_fit(split, epochs=4)
    model.load_state_dict(result.best_state)
    graph = build_training_graph(split, config)
    again = evaluate(model, split.info, split.x, graph.adj,
                     {"valid": (split.valid_pos, split.valid_neg)}, 1024)
    assert again["valid_hits_20"] == result.best_metrics["valid_hits_20"]


def test_fit_prefers_validation_over_test_and_the_last_epoch(ddi_standin_split, monkeypatch):
    # valid peaks at epoch 2, test at epoch 4; the best epoch must be 2.
    script = iter([(0.1, 0.1), (0.5, 0.2), (0.3, 0.3), (0.2, 0.9)])

    def scripted_evaluate(model, info, x, adj, splits, batch_size):
        valid, test = next(script)
        return {"valid_hits_20": valid, "test_hits_20": test}

    monkeypatch.setattr("plnlp_core.experiment.evaluate", scripted_evaluate)
    _, _, result = small_fit(ddi_standin_split, epochs=4)
    assert result.best_epoch == 2
    assert result.best_metrics == {"valid_hits_20": 0.5, "test_hits_20": 0.2}
    assert [e.best_state is not None for e in result.history] == [True, True, False, False]


def test_fit_evaluates_every_eval_every_epochs_and_after_the_last(ddi_standin_split):
    _, _, result = small_fit(ddi_standin_split, epochs=5, eval_every=2)
    assert [e.epoch for e in result.history if e.metrics] == [2, 4, 5]


def test_walk_pairs_join_the_positives_after_unit_weight_edges_and_train_finitely(
        ddi_standin_split):
    from plnlp_core.random_walk import random_walk_pairs, walk_starts

    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "epochs": 2, "loss": "weighted_hinge_auc",
                                       "walk_length": 3, "sampler": "local"})
    config.validate()
    torch.manual_seed(0)
    plain = build_training_graph(split, config)
    starts = walk_starts(config.walk_starts, split.num_nodes, split.train_pos)
    pairs, weights = random_walk_pairs(plain.adj, starts, 3, torch.Generator().manual_seed(0))
    graph = build_training_graph(split, config, pairs, weights)
    assert graph.positives.size(0) == split.train_pos.size(0) + pairs.size(0)
    assert torch.equal(graph.weights[:split.train_pos.size(0)],
                       torch.ones(split.train_pos.size(0)))
    model = build_model(config, split.info, split.num_nodes)
    result = fit(model, config, split, graph)
    assert all(torch.isfinite(torch.tensor(e.train_loss)) for e in result.history)


def test_train_step_returns_the_unscaled_ranking_loss_without_l2():
    torch.manual_seed(0)
    config = PLNLPConfig(embedding_dim=4, hidden_channels=4, encoder="none")
    from plnlp_core.datasets import DATASETS
    from plnlp_core.graph import build_adjacency

    model = build_model(config, DATASETS.get("ddi"), 6)
    adj, _ = build_adjacency(torch.tensor([[0, 1], [2, 3]]), 6)
    batch = PairBatch(torch.tensor([[0, 1], [2, 3]]), None, torch.tensor([[0, 4], [2, 5]]),
                      torch.tensor([[0], [1]]))
    with torch.no_grad():
        scores = model(None, adj, torch.cat([batch.pos, batch.neg]))
        expected = LOSSES.get("auc")(scores[:2], scores[2:][batch.share_index], None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.node_input.embedding.weight.detach().clone()
    got = train_step(model, optimizer, None, adj, batch, LOSSES.get("auc"), l2=0.5,
                     world_size=3)
    assert got == pytest.approx(expected.item())
    assert not torch.equal(model.node_input.embedding.weight, before)


def test_draw_batch_pairs_m_positives_with_m_negatives_shared_num_neg_ways():
    from plnlp_core.edge_set import EdgeSet
    from plnlp_core.sampling import GlobalSampler

    pos = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4]])
    sampler = GlobalSampler(EdgeSet(pos, 10, undirected=True))
    weight = torch.tensor([1.0, 0.5, 0.25, 1.0])
    batch = draw_batch(pos, weight, sampler, 3, torch.Generator().manual_seed(0))
    assert batch.pos is pos and batch.weight is weight
    assert batch.neg.shape == (4, 2)
    assert batch.share_index.shape == (4, 3)
