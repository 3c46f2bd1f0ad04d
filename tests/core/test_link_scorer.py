"""The trained model put to use: pair scores as evaluation computes them,
top-K non-edges against brute force, ids in and out, and a saved scorer
that scores as the model it came from."""
import warnings

import pyarrow as pa
import pytest
import torch

from plnlp_core.assembly import build_input_adjacency, build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.link_scorer import LinkScorer, known_edges

SMALL = {"embedding_dim": 8, "hidden_channels": 8, "predictor_hidden": 8}


def scorer_of(split, config: PLNLPConfig, ids=None) -> tuple[LinkScorer, torch.nn.Module]:
    torch.manual_seed(0)
    model = build_model(config, split.info, split.num_nodes)
    adj, _ = build_input_adjacency(split, config)
    return LinkScorer.encode(model, split, adj, config, NodeIds(split.num_nodes, ids)), model


@pytest.mark.parametrize("settings", [
    {"predictor": "mlp"}, {"predictor": "dot"},
    {"encoder_level": "edge", "encoder": "sage", "predictor": "mlp"},
    {"encoder_level": "edge", "encoder": "sum", "encoder_residual": True, "predictor": "ncn",
     "ncn_xlin": True, "ncn_two_layer_output": True},
])
def test_scores_equal_the_models_own_and_survive_save_and_load(ddi_standin_split, tmp_path,
                                                                 settings):
    config = PLNLPConfig(**SMALL, **settings)
    scorer, model = scorer_of(ddi_standin_split, config)
    pairs = ddi_standin_split.test_neg[:50]
    model.eval()
    adj, _ = build_input_adjacency(ddi_standin_split, config)
    expected = model(ddi_standin_split.x, adj, pairs)
    assert torch.allclose(scorer.score(pairs), expected, atol=1e-6)
    scorer.save(tmp_path / "scorer")
    loaded = LinkScorer.load(tmp_path / "scorer")
    assert torch.allclose(loaded.score(pairs), expected, atol=1e-6)
    assert all(p.device.type == "meta" for p in loaded.model.encoder.parameters())


@pytest.mark.parametrize("predictor", ["mlp", "dot", "bilinear"])
def test_top_k_is_the_brute_force_best_of_each_nodes_non_edges(ddi_standin_split, predictor):
    config = PLNLPConfig(**SMALL, predictor=predictor)
    scorer, _ = scorer_of(ddi_standin_split, config)
    n = ddi_standin_split.num_nodes
    known = known_edges(ddi_standin_split).to_dense().bool()
    nodes = torch.tensor([0, 5, 17])
    sources, candidates, scores, ranks = (torch.cat(parts) for parts in
                                          zip(*scorer.recommend(nodes, 4), strict=True))
    for node in nodes.tolist():
        everyone = torch.stack([torch.full((n,), node), torch.arange(n)], dim=1)
        all_scores = scorer.score(everyone)
        allowed = ~known[node]
        allowed[node] = False
        expected = all_scores.masked_fill(~allowed, float("-inf")).topk(4).indices
        assert candidates[sources == node].tolist() == expected.tolist()
        assert torch.allclose(scores[sources == node], all_scores[expected], atol=1e-5)
        assert not known[node, candidates[sources == node]].any()
        assert ranks[sources == node].tolist() == [1, 2, 3, 4]


def test_a_loaded_scorer_reads_the_known_edges_only_to_recommend(ddi_standin_split, tmp_path):
    """A served model scores pairs: it must not hold the graph's known
    edges, which only recommendations leave out."""
    scorer, _ = scorer_of(ddi_standin_split, PLNLPConfig(**SMALL))
    scorer.save(tmp_path / "scorer")
    loaded = LinkScorer.load(tmp_path / "scorer")
    loaded.score(ddi_standin_split.test_neg[:10])
    assert not isinstance(loaded._known, torch.Tensor)
    nodes = torch.tensor([0, 5])
    expected, found = (torch.cat(next(s.recommend(nodes, 3))[1:2]) for s in (scorer, loaded))
    assert found.tolist() == expected.tolist()
    assert torch.equal(loaded.known.to_dense(), scorer.known.to_dense())


def test_top_k_counts_are_checked_and_known_edges_include_held_out_ones(ddi_standin_split):
    scorer, _ = scorer_of(ddi_standin_split, PLNLPConfig(**SMALL))
    n = ddi_standin_split.num_nodes
    for k in (0, n):
        with pytest.raises(PLNLPError, match=f"between 1 and {n - 1}"):
            next(scorer.recommend(torch.arange(n), k))
    u, v = ddi_standin_split.test_pos[0].tolist()
    assert known_edges(ddi_standin_split).to_dense()[v, u] == 1


def test_user_ids_map_in_and_unknown_ones_are_refused_by_name(ddi_standin_split):
    n = ddi_standin_split.num_nodes
    ids = pa.array([f"drug{i:03d}" for i in range(n)])
    scorer, _ = scorer_of(ddi_standin_split, PLNLPConfig(**SMALL), ids)
    pairs = scorer.pairs_of(["drug003", "drug010"], ["drug004", "drug000"])
    assert pairs.tolist() == [[3, 4], [10, 0]]
    assert scorer.node_ids.of(torch.tensor([2])).to_pylist() == ["drug002"]
    with pytest.raises(PLNLPError, match=rf"'aspirin' is not a node .* {n} nodes"):
        scorer.pairs_of(["drug001"], ["aspirin"])
    numbered = NodeIds(n)
    with pytest.raises(PLNLPError, match=f"{n} is not a node .* 0 to {n - 1}"):
        numbered.positions([1, n])
    with pytest.raises(PLNLPError, match="must be integers"):
        numbered.positions(["x"])


@pytest.mark.parametrize(("src", "dst", "refusal"), [
    ([0, 1.5], [1, 2], r"source node ids must be integers for this model, and row 2's src is "
                       r"1\.5;"),
    ([0, 1], ["1", "x"], r"destination node ids must be integers for this model, and row 2's "
                         r"dst is 'x';"),
    ([True], [1], r"row 1's src is True;"),
    ([0, 1], [2, None], r"row 2's dst is blank; give each row a destination node id"),
    ([0, 1], [2, float("nan")], r"row 2's dst is blank;"),
    ([1, "x"], [2, 3], r"row 2's src is 'x';"),  # a column of mixed types (a JSON request)
])
def test_a_fractional_non_numeric_or_blank_id_is_refused_by_row_and_column(src, dst, refusal):
    numbered = NodeIds(60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's cast of a blank to an integer warned
        with pytest.raises(PLNLPError, match=refusal):
            torch.stack([numbered.positions(src, "source node id", "src"),
                         numbered.positions(dst, "destination node id", "dst")])


def test_blank_ids_of_a_graph_of_ones_own_are_refused_by_row_and_column():
    ids = NodeIds(3, pa.array(["a", "b", "c"]))
    for blank in (None, "", "  "):
        with pytest.raises(PLNLPError, match="row 2's dst is blank"):
            ids.positions(pa.chunked_array([["a", blank]]), "destination node id", "dst")
    assert ids.positions(pa.chunked_array([["c", "a"]])).tolist() == [2, 0]
