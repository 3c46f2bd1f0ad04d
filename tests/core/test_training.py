"""Training: train_step, train_epoch and fitting.fit on the ddi stand-in."""
import pytest
import torch

from plnlp_core.assembly import build_model, build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.losses import LOSSES
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import PairBatch, StepOptions, draw_batch, train_step
from plnlp_core.training.experiment import prepare_experiment, run_experiment
from plnlp_core.training.fitting import fit

SMALL = dict(embedding_dim=16, hidden_channels=16, predictor_hidden=16, epochs=8,
             batch_size=64, lr=0.02, num_neg=2, eval_batch_size=1024)


def small_fit(split, **changes):
    config = PLNLPConfig.from_mapping({**SMALL, **changes})
    config.validate()
    experiment = prepare_experiment(config, split)
    return experiment.model, config, run_experiment(experiment)


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

    monkeypatch.setattr("plnlp_core.training.fitting.evaluate", scripted_evaluate)
    _, _, result = small_fit(ddi_standin_split, epochs=4)
    assert result.best_epoch == 2
    assert result.best_metrics == {"valid_hits_20": 0.5, "test_hits_20": 0.2}
    assert [e.improved for e in result.history] == [True, True, False, False]


def test_fit_evaluates_every_eval_every_epochs_and_after_the_last(ddi_standin_split):
    _, _, result = small_fit(ddi_standin_split, epochs=5, eval_every=2)
    assert [e.epoch for e in result.history if e.metrics] == [2, 4, 5]


def test_walk_rounds_join_the_positives_after_the_edges_and_train_finitely(
        ddi_standin_split):
    from plnlp_core.assembly import build_walk_rounds

    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "epochs": 3, "loss": "weighted_hinge_auc",
                                       "walk_length": 3, "walk_rounds": 2, "sampler": "local",
                                       "edge_margin": "raw"})
    config.validate()
    torch.manual_seed(0)
    rounds = build_walk_rounds(split, config)
    assert len(rounds) == 2 and not torch.equal(rounds[0][0], rounds[1][0])
    graph = build_training_graph(split, config, rounds)
    m = split.train_pos.size(0)
    for epoch, walk_round in ((1, 0), (2, 1), (3, 0)):
        pairs, weights = graph.epoch_positives(epoch)
        assert torch.equal(pairs[m:], rounds[walk_round][0])
        assert torch.equal(weights[:m], torch.ones(m))
        assert torch.equal(weights[m:], rounds[walk_round][1])
    model = build_model(config, split.info, split.num_nodes)
    result = fit(model, config, split, graph)
    assert all(torch.isfinite(torch.tensor(e.train_loss)) for e in result.history)


def test_walk_positives_walks_ranks_the_walk_pairs_alone(ddi_standin_split):
    from plnlp_core.assembly import build_walk_rounds

    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "loss": "weighted_hinge_auc", "walk_length": 2,
                                       "walk_positives": "walks"})
    rounds = build_walk_rounds(split, config)
    pairs, weights = build_training_graph(split, config, rounds).epoch_positives(1)
    assert torch.equal(pairs, rounds[0][0]) and torch.equal(weights, rounds[0][1])


def test_normalized_margins_divide_each_weight_by_the_endpoints_weighted_degrees():
    from plnlp_core.graph import normalized_margins

    # node 0: edges of weight 2 and 1 (strength 3); node 1: 2 (strength 2); node 2: 1 + 4 = 5
    edges = torch.tensor([[0, 1], [0, 2], [2, 3]])
    weights = torch.tensor([2.0, 1.0, 4.0])
    margins = normalized_margins(edges, weights, 4)
    expected = torch.tensor([2 / (3 * 2) ** 0.5, 1 / (3 * 5) ** 0.5, 4 / (5 * 4) ** 0.5])
    torch.testing.assert_close(margins, expected)


def test_weighted_loss_ranks_edges_with_normalized_margins_by_default(ddi_standin_split):
    from plnlp_core.graph import normalized_margins

    split = ddi_standin_split
    config = PLNLPConfig.from_mapping({**SMALL, "loss": "weighted_hinge_auc"})
    config.validate()
    graph = build_training_graph(split, config)
    torch.testing.assert_close(graph.weights,
                               normalized_margins(split.train_pos, None, split.num_nodes))
    assert build_training_graph(split, config.replace(loss="auc")).weights is None


def test_train_step_returns_the_unscaled_ranking_loss_without_l2():
    torch.manual_seed(0)
    config = PLNLPConfig(embedding_dim=4, hidden_channels=4, encoder="none")
    from plnlp_core.data.datasets import DATASETS
    from plnlp_core.graph import build_adjacency

    model = build_model(config, DATASETS.get("ddi"), 6)
    adj, _ = build_adjacency(torch.tensor([[0, 1], [2, 3]]), 6)
    batch = PairBatch(torch.tensor([[0, 1], [2, 3]]), None, torch.tensor([[0, 4], [2, 5]]),
                      torch.tensor([[0], [1]]))
    with torch.no_grad():
        scores = model(None, adj, torch.cat([batch.pos, batch.neg]))
        expected = LOSSES.get("auc")(scores[:2], scores[2:][batch.neg_index], None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.node_input.embedding.weight.detach().clone()
    options = StepOptions(LOSSES.get("auc"), l2=0.5, world_size=3)
    got = train_step(model, optimizer, None, adj, batch, options)
    assert got.loss.item() == pytest.approx(expected.item())
    gap = (scores[:2].unsqueeze(-1) - scores[2:][batch.neg_index]).mean()
    assert got.score_gap.item() == pytest.approx(gap.item())
    assert not torch.equal(model.node_input.embedding.weight, before)


def test_draw_batch_pairs_m_positives_with_m_negatives_shared_num_neg_ways():
    from plnlp_core.edge_set import EdgeSet
    from plnlp_core.sampling import GlobalSampler

    pos = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4]])
    sampler = GlobalSampler(EdgeSet(pos, 10, undirected=True))
    weight = torch.tensor([1.0, 0.5, 0.25, 1.0])
    batch = draw_batch(pos, weight, sampler, 3, "shared", torch.Generator().manual_seed(0))
    assert batch.pos is pos and batch.weight is weight
    assert batch.neg.shape == (4, 2)
    assert batch.neg_index.shape == (4, 3)


def test_clip_gradients_clips_encoder_and_predictor_each_and_not_the_embedding():
    from plnlp_core.data.datasets import DATASETS

    torch.manual_seed(0)
    config = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor="mlp", predictor_hidden=8)
    model = build_model(config, DATASETS.get("ddi"), 10)
    for p in model.parameters():
        p.grad = torch.full_like(p, 3.0)
    model.clip_gradients(0.5)

    def norm(module):
        return torch.cat([p.grad.reshape(-1) for p in module.parameters()]).norm()

    assert norm(model.encoder) == pytest.approx(0.5, rel=1e-4)
    assert norm(model.predictor) == pytest.approx(0.5, rel=1e-4)
    assert torch.equal(model.node_input.embedding.weight.grad,
                       torch.full_like(model.node_input.embedding.weight, 3.0))


def test_linear_lr_decay_follows_the_authors_schedule(ddi_standin_split):
    from plnlp_core.training.fitting import learning_rate_schedule

    config = PLNLPConfig(lr=0.01, epochs=4, lr_decay="linear")
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=config.lr)
    schedule = learning_rate_schedule(optimizer, config)
    seen = []
    for _ in range(config.epochs):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    # epoch e trains at lr * max(1 - (e - 1) / E, 1e-4)
    assert seen == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01 * 1e-4)
    assert learning_rate_schedule(optimizer, config.replace(lr_decay="none")) is None


def test_select_best_last_keeps_the_last_of_equal_validation_scores(
        ddi_standin_split, monkeypatch):
    def saturated(model, info, x, adj, splits, batch_size):
        return {"valid_hits_20": 1.0, "test_hits_20": 0.5}

    monkeypatch.setattr("plnlp_core.training.fitting.evaluate", saturated)
    _, _, first = small_fit(ddi_standin_split, epochs=3)
    _, _, last = small_fit(ddi_standin_split, epochs=3, select_best="last")
    assert first.best_epoch == 1
    assert last.best_epoch == 3
    assert [e.improved for e in last.history] == [True, True, True]


def test_max_batches_per_epoch_stops_the_pass_early(ddi_standin_split, monkeypatch):
    import plnlp_core.training.epoch as training

    steps = []
    real_step = training.train_step
    monkeypatch.setattr(training, "train_step",
                        lambda *args: steps.append(1) or real_step(*args))
    small_fit(ddi_standin_split, epochs=2, max_batches_per_epoch=2)
    assert len(steps) == 4
    steps.clear()
    small_fit(ddi_standin_split, epochs=1)
    assert len(steps) == -(-ddi_standin_split.train_pos.size(0) // SMALL["batch_size"])


def test_edge_endpoints_start_a_walk_from_both_ends_of_every_edge():
    from plnlp_core.random_walk import walk_starts

    edges = torch.tensor([[0, 1], [0, 2], [0, 1]])
    assert walk_starts("edge_endpoints", 5, edges).tolist() == [0, 1, 0, 2, 0, 1]
    assert walk_starts("train_endpoints", 5, edges).tolist() == [0, 1, 2]
    assert walk_starts("all", 3, edges).tolist() == [0, 1, 2]


# the adversarial sampler learns a generator that the resumed run must restore
@pytest.mark.parametrize("sampler", ["global", "adversarial"])
def test_a_resumed_fit_ends_exactly_as_an_uninterrupted_one(ddi_standin_split, tmp_path,
                                                            sampler):
    from plnlp_core.training.fit_state import FitState

    split = ddi_standin_split
    changes = dict(epochs=4, dropout=0.3, predictor="mlp", predictor_dropout=0.2,
                   lr_decay="linear", num_neg=3, negatives="independent", sampler=sampler,
                   candidate_pool=4)
    whole_model, config, whole = small_fit(split, **changes)

    class Crash(Exception):
        pass

    def crash_after_saving_epoch_2(epoch):
        if epoch.epoch == 2:
            epoch.snapshot().save(tmp_path)
            raise Crash

    torch.manual_seed(config.seed)
    model = build_model(config, split.info, split.num_nodes)
    graph = build_training_graph(split, config)
    with pytest.raises(Crash):
        fit(model, config, split, graph, on_epoch=crash_after_saving_epoch_2)
    state = FitState.load(tmp_path)
    assert state.epoch == 2

    torch.manual_seed(123)  # a restarted worker starts from other random states
    fresh = build_model(config, split.info, split.num_nodes)
    resumed = fit(fresh, config, split, graph, resume=state)
    assert [e.epoch for e in resumed.history] == [3, 4]
    assert [e.train_loss for e in resumed.history] == [e.train_loss for e in whole.history[2:]]
    assert [e.score_gap for e in resumed.history] == [e.score_gap for e in whole.history[2:]]
    assert resumed.best_epoch == whole.best_epoch
    assert resumed.best_metrics == whole.best_metrics
    for key, value in whole_model.state_dict().items():
        assert torch.equal(fresh.state_dict()[key], value), key


@pytest.mark.parametrize("encoder", ["sage", "gcn"])
def test_bf16_runs_the_predictor_in_bfloat16_and_the_loss_in_fp32(ddi_standin_split, encoder):
    seen = {}
    model, config, result = small_fit(ddi_standin_split, epochs=2, precision="bf16",
                                      encoder=encoder, predictor="mlp")
    first = model.predictor.mlp.lins[0]
    first.register_forward_hook(lambda m, i, out: seen.update(dtype=out.dtype))
    graph = build_training_graph(ddi_standin_split, config)
    batch = PairBatch(graph.positives[:8], None, graph.positives[8:16], torch.zeros(8, 1).long())
    losses = {}
    options = StepOptions(lambda p, n, w: losses.setdefault("dtype", p.dtype) and (p - n).sum(),
                          precision="bf16")
    train_step(model, torch.optim.SGD(model.parameters(), lr=0.0), None, graph.adj, batch,
               options)
    assert seen["dtype"] == torch.bfloat16 and losses["dtype"] == torch.float32
    assert all(torch.isfinite(torch.tensor(e.train_loss)) for e in result.history)


def test_precision_sets_tf32_matmuls_only_for_tf32():
    from plnlp_core.training.epoch import set_matmul_precision

    set_matmul_precision("tf32")
    assert torch.get_float32_matmul_precision() == "high"
    for precision in ("fp32", "bf16"):
        set_matmul_precision(precision)
        assert torch.get_float32_matmul_precision() == "highest"


def test_auto_precision_is_bf16_on_a_gpu_with_bfloat16_and_fp32_elsewhere(monkeypatch):
    from plnlp_core.training.epoch import resolve_precision

    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert resolve_precision("auto", cuda) == "bf16"
    assert resolve_precision("auto", cpu) == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert resolve_precision("auto", cuda) == "fp32"  # a GPU before Ampere
    for precision in ("fp32", "tf32", "bf16"):
        assert resolve_precision(precision, cuda) == precision


def test_fit_trains_at_the_precision_auto_resolves_to(ddi_standin_split, monkeypatch):
    import plnlp_core.training.fitting

    asked = []
    monkeypatch.setattr(plnlp_core.training.fitting, "resolve_precision",
                        lambda precision, device: asked.append(precision) or "bf16")
    seen = set()
    torch.manual_seed(0)
    config = PLNLPConfig.from_mapping({**SMALL, "epochs": 1, "precision": "auto",
                                       "predictor": "mlp"})
    model = build_model(config, ddi_standin_split.info, ddi_standin_split.num_nodes)
    model.predictor.mlp.lins[0].register_forward_hook(
        lambda m, i, out: seen.add(out.dtype) if m.training else None)
    fit(model, config, ddi_standin_split, build_training_graph(ddi_standin_split, config))
    assert asked == ["auto"] and seen == {torch.bfloat16}


def test_a_step_on_two_threads_makes_the_same_update_every_time():
    """Negative sample sharing ranks each positive against ``num_neg``
    gathered scores; their gradients are summed in one order on any number
    of CPU threads, so a seed trains the same model twice."""
    from plnlp_core.data.datasets import DATASETS
    from plnlp_core.graph import build_adjacency

    generator = torch.Generator().manual_seed(0)
    nodes, m, num_neg = 2000, 65536, 4
    pos = torch.randint(0, nodes, (m, 2), generator=generator)
    neg = torch.randint(0, nodes, (m, 2), generator=generator)
    index = torch.stack([torch.randperm(m, generator=generator) for _ in range(num_neg)], -1)
    adj, _ = build_adjacency(pos, nodes)
    config = PLNLPConfig(embedding_dim=8, hidden_channels=8, encoder="none")
    threads, updated = torch.get_num_threads(), []
    torch.set_num_threads(2)
    try:
        for _ in range(3):
            torch.manual_seed(0)
            model = build_model(config, DATASETS.get("ddi"), nodes)
            train_step(model, torch.optim.SGD(model.parameters(), lr=0.1), None, adj,
                       PairBatch(pos, None, neg, index), StepOptions(LOSSES.get("auc")))
            updated.append(model.node_input.embedding.weight.detach().clone())
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(updated[0], updated[1]) and torch.equal(updated[0], updated[2])
