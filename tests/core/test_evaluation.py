"""Metrics come from OGB's Evaluator: Hits@K for ddi, MRR for citation2;
own graphs add AUC."""
import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.graph import build_adjacency
from plnlp_core.scoring.evaluation import auc, evaluate, ogb_metrics, score_pairs

DDI = DATASETS.get("ddi")


def test_hits_are_one_when_every_positive_beats_every_negative():
    neg = torch.linspace(-1.0, 0.0, 150)
    pos = torch.linspace(0.5, 1.0, 10)
    assert ogb_metrics(DDI, pos, neg) == {"hits_20": 1.0, "hits_50": 1.0, "hits_100": 1.0}


def test_hits_are_zero_when_every_negative_beats_every_positive():
    neg = torch.linspace(1.0, 2.0, 150)
    pos = torch.linspace(-1.0, 0.0, 10)
    assert ogb_metrics(DDI, pos, neg) == {"hits_20": 0.0, "hits_50": 0.0, "hits_100": 0.0}


def test_hits_at_k_match_a_manual_count_above_the_kth_best_negative():
    # negatives 0, 1, ..., 199: the 20th best is 180, the 50th 150, the 100th 100.
    neg = torch.arange(200, dtype=torch.float)
    # positives strictly above 180: 2 of 8; above 150: 5; above 100: 6 (ties lose)
    pos = torch.tensor([199.5, 181.0, 180.0, 170.0, 151.0, 120.0, 100.0, 3.0])
    assert ogb_metrics(DDI, pos, neg) == {"hits_20": 2 / 8, "hits_50": 5 / 8,
                                          "hits_100": 6 / 8}


def test_hits_at_k_match_a_manual_count_on_random_scores():
    generator = torch.Generator().manual_seed(0)
    pos, neg = torch.randn(300, generator=generator) + 2.0, torch.randn(500, generator=generator)
    metrics = ogb_metrics(DDI, pos, neg)
    for k in (20, 50, 100):
        kth = neg.sort(descending=True).values[k - 1]
        assert metrics[f"hits_{k}"] == pytest.approx(float((pos > kth).float().mean()))
    assert 0.0 < metrics["hits_20"] < metrics["hits_50"] < metrics["hits_100"] < 1.0


def test_mrr_ranks_each_positive_among_its_own_negatives():
    # positive 0 (score 3) beats its negatives 1, 2: rank 1;
    # positive 1 (score 1) is below both its negatives 2, 3: rank 3; MRR (1 + 1/3) / 2
    pos = torch.tensor([3.0, 1.0])
    neg = torch.tensor([1.0, 2.0, 2.0, 3.0])  # rows of K = 2 per positive
    metrics = ogb_metrics(DATASETS.get("citation2"), pos, neg)
    assert metrics.keys() == {"mrr"}
    assert metrics["mrr"] == pytest.approx(2 / 3)


def test_score_pairs_in_chunks_equals_scoring_all_at_once():
    torch.manual_seed(0)
    model = build_model(PLNLPConfig(embedding_dim=8, hidden_channels=8), DDI, 10)
    adj, _ = build_adjacency(torch.tensor([[0, 1], [1, 2], [5, 6]]), 10)
    model.eval()
    h = model.encode(None, adj)
    pairs = torch.randint(10, (23, 2))
    torch.testing.assert_close(score_pairs(model, h, pairs, 4), model.score(h, pairs).detach())


def test_evaluate_keys_every_metric_by_split():
    torch.manual_seed(0)
    model = build_model(PLNLPConfig(embedding_dim=8, hidden_channels=8), DDI, 10)
    adj, _ = build_adjacency(torch.tensor([[0, 1], [1, 2], [5, 6]]), 10)
    pairs = torch.randint(10, (30, 2))
    metrics = evaluate(model, DDI, None, adj, {"valid": (pairs, pairs), "test": (pairs, pairs)},
                       8)
    assert set(metrics) == {f"{s}_hits_{k}" for s in ("valid", "test") for k in (20, 50, 100)}
    assert not model.training


OWN = DatasetInfo("mine", "mine", "auc", directed=False, feature_dim=0, hits_k=(1, 5))


def test_auc_equals_scikit_learns_with_ties():
    generator = torch.Generator().manual_seed(0)
    # scores on a coarse grid, so that many positives tie with negatives
    pos = torch.randint(0, 8, (300,), generator=generator).float() + 1.0
    neg = torch.randint(0, 8, (500,), generator=generator).float()
    expected = roc_auc_score(np.r_[np.ones(300), np.zeros(500)], np.r_[pos.numpy(), neg.numpy()])
    assert auc(pos, neg) == pytest.approx(expected, abs=1e-12)
    assert auc(torch.ones(3), torch.ones(4)) == 0.5
    assert auc(torch.tensor([2.0, 3.0]), torch.tensor([0.0, 1.0])) == 1.0


def test_own_graphs_get_auc_and_their_hits_cut_offs():
    pos = torch.tensor([5.0, 3.0, 1.0])
    neg = torch.tensor([4.0, 2.0, 0.0, 0.0, 0.0])  # 1st best 4, 5th best 0
    assert OWN.metric_keys == ["auc", "hits_1", "hits_5"] and OWN.main_metric_key == "auc"
    assert ogb_metrics(OWN, pos, neg) == {"auc": pytest.approx(12 / 15), "hits_1": 1 / 3,
                                          "hits_5": 1.0}


def test_ogb_datasets_keep_their_metric_keys():
    assert DDI.metric_keys == ["hits_20", "hits_50", "hits_100"]
    assert DDI.main_metric_key == "hits_20"
    citation2 = DATASETS.get("citation2")
    assert citation2.metric_keys == ["mrr"] and citation2.main_metric_key == "mrr"


def test_shared_negatives_mrr_ranks_each_positive_among_all_negatives_ties_below():
    from plnlp_core.scoring.evaluation import shared_negatives_mrr

    negatives = torch.tensor([0.1, 0.5, 0.9])
    # ranks 1 (above all), 2 (below 0.9), 4 (below all), 3 (a tie with 0.5 ranks below it)
    positives = torch.tensor([1.0, 0.6, 0.0, 0.5])
    expected = (1 + 1 / 2 + 1 / 4 + 1 / 3) / 4
    assert shared_negatives_mrr(positives, negatives) == pytest.approx(expected)


def test_a_planetoid_graph_is_scored_by_hits_auc_and_mrr():
    from plnlp_core.data.datasets import DATASETS
    from plnlp_core.scoring.evaluation import ogb_metrics

    metrics = ogb_metrics(DATASETS.get("cora"), torch.tensor([0.9, 0.8]), torch.tensor([0.1, 0.85]))
    assert set(metrics) == {"hits_20", "hits_50", "hits_100", "auc", "mrr"}
    assert metrics["auc"] == pytest.approx(0.75) and metrics["hits_100"] == 1.0
