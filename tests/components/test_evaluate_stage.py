"""The final metrics and scorer a run leaves for its driver, without Ray:
the best state is what gets encoded, the marker comes last, a missing
export is one sentence, and a heuristic's keys come from the same finish."""
import json
from pathlib import Path

import pytest
import torch

from components.evaluate import (
    FINAL_FILE,
    SCORER_DIR,
    clear_final,
    export_best,
    finish,
    read_final,
)
from components.storage.location import Location
from plnlp_core.assembly import build_input_adjacency, build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.evaluation import scorer_metrics
from plnlp_core.scoring.heart import heart_split_metrics, split_heart_negatives
from plnlp_core.scoring.heuristics import adjacency, heuristic_scorer
from plnlp_core.scoring.link_scorer import LinkScorer

SMALL = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor_hidden=8, predictor="mlp")


def test_the_best_state_is_exported_with_its_metrics_as_final(ddi_standin_split, tmp_path):
    split = ddi_standin_split
    adj, _ = build_input_adjacency(split, SMALL)
    torch.manual_seed(0)
    best = build_model(SMALL, split.info, split.num_nodes)
    torch.manual_seed(1)
    trained_on = build_model(SMALL, split.info, split.num_nodes)  # a later, worse state
    metrics = {"valid_hits_20": 0.25, "test_hits_20": 0.125}
    export_best(trained_on, best.state_dict(), metrics, split, adj, SMALL,
                NodeIds(split.num_nodes), Location(tmp_path))
    final, id_kind = read_final(Location(tmp_path))
    assert final == {"final_valid_hits_20": 0.25, "final_test_hits_20": 0.125}
    assert id_kind == "long"
    pairs = split.test_neg[:40]
    best.eval()
    expected = best(split.x, adj, pairs)
    assert torch.allclose(LinkScorer.load(tmp_path / SCORER_DIR).score(pairs), expected,
                          atol=1e-6)


def test_a_missing_export_is_one_sentence_and_clearing_removes_a_stale_one(
    ddi_standin_split, tmp_path: Path,
):
    with pytest.raises(PLNLPError, match=r"without writing its final metrics .* --resume"):
        read_final(Location(tmp_path))
    (tmp_path / SCORER_DIR).mkdir()
    (tmp_path / FINAL_FILE).write_text(json.dumps({"metrics": {}, "id_kind": "long"}))
    clear_final(Location(tmp_path))
    assert not (tmp_path / FINAL_FILE).exists() and not (tmp_path / SCORER_DIR).exists()
    with pytest.raises(PLNLPError):
        read_final(Location(tmp_path))


@pytest.mark.slow  # 4 s on one core
def test_a_heuristic_s_final_keys_come_from_the_same_finish(ddi_standin_split):
    split = ddi_standin_split
    score = heuristic_scorer("ra", adjacency(split.train_pos, split.num_nodes))
    hard = split_heart_negatives(split, num_negatives=6)
    expected = {**scorer_metrics(score, split), **heart_split_metrics(score, hard)}
    assert finish(score, split, heart_negatives=hard) == {
        f"final_{key}": value for key, value in expected.items()}
    assert finish(score, split, {"valid_hits_20": 0.5}) == {"final_valid_hits_20": 0.5}
