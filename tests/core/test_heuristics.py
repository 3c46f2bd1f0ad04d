"""Heuristics: CN, AA and RA equal networkx's on a small graph, and their
metrics come keyed as a model's, for OGB datasets and own graphs alike."""
import networkx as nx
import numpy as np
import pandas as pd
import pytest
import torch

import plnlp_core.scoring.heuristics as heuristics
from plnlp_core.data.own_graph import load_own_graph
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heuristics import (
    HEURISTICS,
    adjacency,
    heuristic_scorer,
    heuristic_scores,
)

NETWORKX = {
    "cn": lambda graph, pairs: [len(list(nx.common_neighbors(graph, u, v))) for u, v in pairs],
    "aa": lambda graph, pairs: [p for _, _, p in nx.adamic_adar_index(graph, pairs)],
    "ra": lambda graph, pairs: [p for _, _, p in nx.resource_allocation_index(graph, pairs)],
}


@pytest.mark.parametrize("name", ["cn", "aa", "ra"])
def test_heuristics_equal_networkx(name):
    graph = nx.gnm_random_graph(40, 160, seed=0)
    edges = torch.tensor(list(graph.edges()))
    # repeated, reversed edges and a self-loop change nothing: the view is undirected, unweighted
    noisy = torch.cat([edges, edges.flip(1)[:30], torch.tensor([[3, 3]])])
    generator = torch.Generator().manual_seed(0)
    pairs = torch.randint(40, (500, 2), generator=generator)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    scores = heuristic_scores(name, adjacency(noisy, 40), pairs, batch_size=64)
    expected = NETWORKX[name](graph, [tuple(p) for p in pairs.tolist()])
    np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-6)
    assert scores.dtype == torch.float32 and (scores > 0).any()


@pytest.mark.parametrize("name", ["cn", "aa", "ra"])
def test_the_dense_table_scores_as_the_sparse_gathers(name, monkeypatch):
    adj = adjacency(torch.tensor(list(nx.gnm_random_graph(50, 300, seed=1).edges())), 50)
    pairs = torch.randint(50, (400, 2), generator=torch.Generator().manual_seed(1))
    dense = heuristic_scorer(name, adj)(pairs)
    monkeypatch.setattr(heuristics, "DENSE_ENTRIES", 50 * 50 - 1)  # now too large to hold dense
    torch.testing.assert_close(dense, heuristic_scorer(name, adj, batch_size=64)(pairs))
    torch.testing.assert_close(dense, heuristic_scores(name, adj, pairs))


def test_the_registry_names_the_three_heuristics():
    assert HEURISTICS.names == ["aa", "cn", "ra"]
    with pytest.raises(PLNLPError, match="unknown heuristic"):
        HEURISTICS.get("katz")


def heuristic_metrics(name, split):
    return scorer_metrics(heuristic_scorer(name, adjacency(split.train_pos, split.num_nodes)),
                          split)


def test_heuristic_metrics_on_an_ogb_dataset_have_the_keys_of_evaluate(ddi_standin_split):
    metrics = heuristic_metrics("ra", ddi_standin_split)
    assert set(metrics) == {f"{s}_hits_{k}" for s in ("valid", "test") for k in (20, 50, 100)}
    assert all(0.0 <= value <= 1.0 for value in metrics.values())


def test_heuristic_metrics_on_an_own_graph_include_auc(tmp_path):
    # two cliques joined by one edge: held-out edges close triangles, negatives mostly do not
    cliques = [(a, b) for base in (0, 20) for a in range(base, base + 20)
               for b in range(a + 1, base + 20)]
    path = tmp_path / "cliques.csv"
    pd.DataFrame(cliques + [(0, 20)], columns=["src", "dst"]).to_csv(path, index=False)
    split = load_own_graph(path, hits_k=(5,)).split
    metrics = heuristic_metrics("cn", split)
    assert set(metrics) == {"valid_auc", "valid_hits_5", "test_auc", "test_hits_5"}
    assert metrics["valid_auc"] > 0.9 and metrics["test_auc"] > 0.9
