"""prepare_experiment and run_experiment: one experiment, the same for a
script, a benchmark and each DDP worker."""
import torch

from plnlp_core.assembly import build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.training.experiment import prepare_experiment, run_experiment

SMALL = dict(embedding_dim=8, hidden_channels=8, predictor_hidden=8, epochs=2,
             batch_size=256, eval_batch_size=1024)


def test_workers_rank_disjoint_shares_that_make_up_every_positive(ddi_standin_split):
    config = PLNLPConfig.from_mapping(SMALL)
    whole = build_training_graph(ddi_standin_split, config).positives
    shares = [prepare_experiment(config, ddi_standin_split, rank=rank, world_size=3).graph
              for rank in range(3)]
    assert sum(share.positives.size(0) for share in shares) == whole.size(0)
    assert torch.equal(torch.cat([share.positives for share in shares]).sort(dim=0).values,
                       whole.sort(dim=0).values)


def test_a_config_with_random_walks_draws_its_rounds_from_its_seed(ddi_standin_split):
    config = PLNLPConfig.from_mapping({**SMALL, "walk_length": 3, "walk_rounds": 2})
    first = prepare_experiment(config, ddi_standin_split).graph.walks
    again = prepare_experiment(config, ddi_standin_split).graph.walks
    assert len(first) == 2
    assert all(torch.equal(a[0], b[0]) for a, b in zip(first, again, strict=True))
    assert prepare_experiment(config.replace(walk_length=0, walk_rounds=1),
                              ddi_standin_split).graph.walks is None


def test_the_same_seed_gives_the_same_model_and_the_same_result(ddi_standin_split):
    config = PLNLPConfig.from_mapping(SMALL)
    results = [run_experiment(prepare_experiment(config, ddi_standin_split)) for _ in range(2)]
    assert results[0].best_metrics == results[1].best_metrics
    other = prepare_experiment(config.replace(seed=1), ddi_standin_split).model
    same = prepare_experiment(config, ddi_standin_split).model
    assert any(not torch.equal(a, b) for a, b in zip(other.parameters(), same.parameters(),
                                                     strict=True))
