"""The node-level model: with node_target_edge_removal a training step
encodes on the graph without its positive edges; evaluation, and the
default, encode on the whole graph."""
import pytest
import torch

from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup, remove_edges

NUM_NODES = 20
SMALL = dict(embedding_dim=8, hidden_channels=8, predictor="mlp", predictor_hidden=8)


def random_edges(num_edges: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pairs = torch.randint(NUM_NODES, (num_edges * 3, 2), generator=g)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]].sort(dim=1).values.unique(dim=0)
    return pairs[torch.randperm(pairs.size(0), generator=g)[:num_edges]]


def model_for(removal: bool, encoder: str = "sage") -> torch.nn.Module:
    torch.manual_seed(0)
    config = PLNLPConfig(node_target_edge_removal=removal, encoder=encoder, **SMALL)
    return build_model(config, DATASETS.get("ddi"), NUM_NODES)


@pytest.mark.parametrize("encoder", ["sage", "gcn"])
def test_a_training_step_encodes_on_the_graph_without_its_positive_edges(encoder):
    edges = random_edges(60, 1)
    adj, _ = build_adjacency(edges, NUM_NODES)
    model = model_for(True, encoder).train()
    negatives = torch.tensor([[0, 0], [1, 1]])  # self-pairs: never edges
    pairs = torch.cat([edges[:5], negatives])
    reduced = remove_edges(AdjacencyLookup(adj), edges[:5])
    expected = model.score(model.encode(None, reduced), pairs)
    torch.testing.assert_close(model(None, adj, pairs), expected)
    assert not torch.allclose(model(None, adj, pairs), model.score(model.encode(None, adj), pairs))


def test_evaluation_and_the_default_encode_on_the_whole_graph():
    edges = random_edges(60, 2)
    adj, _ = build_adjacency(edges, NUM_NODES)
    pairs = edges[:5]
    for model in (model_for(True).eval(), model_for(False).train()):
        torch.testing.assert_close(model(None, adj, pairs),
                                   model.score(model.encode(None, adj), pairs))


def test_removal_off_scores_exactly_as_the_model_without_the_option():
    edges = random_edges(60, 3)
    adj, _ = build_adjacency(edges, NUM_NODES)
    off, removal = model_for(False).train(), model_for(True).train()
    removal.load_state_dict(off.state_dict())
    assert torch.equal(off(None, adj, edges[:5]), off.score(off.encode(None, adj), edges[:5]))
    assert not torch.equal(off(None, adj, edges[:5]), removal(None, adj, edges[:5]))


def test_a_step_ranking_most_of_the_graph_is_encoded_in_groups_each_pair_once():
    edges = random_edges(60, 4)
    adj, _ = build_adjacency(edges, NUM_NODES)
    model = model_for(True).train()
    groups = model.removal_groups(model.lookup(adj), edges)
    assert len(groups) == 7  # 60 edges, at most 9 out of each graph
    scores = model(None, adj, edges)
    for index in groups:
        reduced = remove_edges(AdjacencyLookup(adj), edges[index])
        torch.testing.assert_close(scores[index],
                                   model.score(model.encode(None, reduced), edges[index]))


@pytest.mark.parametrize("settings", [{"encoder": "none"},
                                      {"encoder_level": "edge", "predictor": "mlp"}])
def test_node_target_edge_removal_is_refused_without_a_node_level_encoder(settings):
    with pytest.raises(PLNLPError, match="node_target_edge_removal hides each step's positive "
                                         "edges from the node level's encoder"):
        PLNLPConfig(node_target_edge_removal=True, **settings).validate()
    PLNLPConfig(node_target_edge_removal=True).validate()
