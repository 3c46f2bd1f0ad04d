"""Each Ray stage's typed output, on the OGB-layout stand-in."""
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import ray
import torch

from components.augment import augment
from components.evaluate import SCORER_DIR, evaluate_and_export, evaluate_heuristic, read_final
from components.heart import heart_negatives, read_heart_negatives
from components.load import load_dataset
from components.storage.location import Location
from components.storage.parquet_io import read_split
from components.storage.split_meta import DatasetMeta
from components.train.stage import train
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.scoring.heart import heart_split_metrics, split_heart_negatives
from plnlp_core.scoring.heuristics import adjacency, heuristic_scorer
from plnlp_core.scoring.link_scorer import LinkScorer

pytestmark = pytest.mark.slow

TINY = PLNLPConfig(embedding_dim=8, hidden_channels=8, predictor="mlp", predictor_hidden=8,
                   batch_size=64, epochs=2)


@pytest.fixture
def loaded(ray_session, standin_root: Path, tmp_path: Path):
    return ray_session.get(load_dataset.remote("ddi", Location(standin_root),
                                               Location(tmp_path / "stages")))


def test_load_writes_parquet_splits_that_read_back_as_ogb_loaded_them(loaded, standin_root):
    directory = loaded.directory.local_path()
    names = {p.name for p in directory.iterdir()}
    assert names == {"train.parquet", "valid_pos.parquet", "valid_neg.parquet",
                     "test_pos.parquet", "test_neg.parquet", "adj_crow.npy", "adj_col.npy",
                     "adj_values.npy", "degree.npy", "meta.json", "manifest.json"}
    assert set(json.loads((directory / "manifest.json").read_text())["files"]) == \
        names - {"manifest.json"}  # the .npy files are checksummed as the rest
    assert loaded.meta == DatasetMeta.read(directory)
    assert pq.read_table(directory / "train.parquet").column_names == ["src", "dst"]
    direct = load_ogb(DATASETS.get("ddi"), standin_root)
    again = read_split(directory)
    assert again.num_nodes == direct.num_nodes == loaded.meta.num_nodes
    for name in ("train_pos", "valid_pos", "valid_neg", "test_pos", "test_neg"):
        assert torch.equal(getattr(again, name), getattr(direct, name))


def test_augment_writes_walk_rounds_of_pairs_weighted_one_over_step(loaded, tmp_path):
    config = TINY.replace(walk_length=4, loss="weighted_hinge_auc", walk_rounds=2)
    walks = augment(loaded, config, Location(tmp_path / "walks"), num_chunks=3)
    assert walks.rounds == 2
    tables = [pq.read_table(walks.round_directory(r)) for r in range(2)]
    assert sum(t.num_rows for t in tables) == walks.num_pairs > 0
    assert tables[0].column("dst").to_pylist() != tables[1].column("dst").to_pylist()
    for r, table in enumerate(tables):
        assert len(list(walks.round_directory(r).glob("part-*.parquet"))) == 3
        weights = torch.tensor(table.column("weight").to_pylist())
        steps = (1 / weights).round()
        assert set(steps.tolist()) <= {1.0, 2.0, 3.0, 4.0}
        torch.testing.assert_close(weights, 1 / steps)
        assert all(s != d for s, d in zip(table.column("src").to_pylist(),
                                          table.column("dst").to_pylist(), strict=True))


def test_heart_builds_the_split_s_negatives_once_and_scores_a_heuristic_on_them(
    loaded, tmp_path, capsys,
):
    heart = heart_negatives(loaded, 12, Location(tmp_path / "cache"))
    assert "building heart output" in capsys.readouterr().out
    assert heart_negatives(loaded, 12, Location(tmp_path / "cache")) == heart
    assert "reusing cached heart output" in capsys.readouterr().out
    hard = read_heart_negatives(heart)
    split = read_split(loaded.directory.local_path())
    expected = split_heart_negatives(split, 12)
    assert hard.mode == "heart" and hard.ceiling == pytest.approx(expected.ceiling)
    assert hard.negatives.keys() == expected.negatives.keys()
    for part, part_negatives in hard.negatives.items():
        assert part_negatives.dtype == torch.long
        assert torch.equal(part_negatives, expected.negatives[part])
        assert torch.equal(hard.positives[part], expected.positives[part])
    final = ray.get(evaluate_heuristic.remote(loaded, "ra", TINY, heart))
    scorer = heuristic_scorer("ra", adjacency(split.train_pos, split.num_nodes))
    heart_keys = {f"final_{key}": value
                  for key, value in heart_split_metrics(scorer, expected).items()}
    assert {key: final[key] for key in heart_keys} == pytest.approx(heart_keys)
    assert "final_test_hits_20" in final and "final_test_heart_hits_20" in final


def test_the_worker_exports_what_evaluating_its_best_checkpoint_gives(loaded, tmp_path):
    heart = heart_negatives(loaded, 10, Location(tmp_path / "cache"))
    trained = train(loaded, None, TINY, Location(tmp_path / "work"), export=True, heart=heart)
    assert trained.best_epoch in (1, 2)
    assert [row["epoch"] for row in trained.history] == [1, 2]
    exported, _ = read_final(Location(tmp_path / "work"))
    heart_keys = {f"final_{part}_heart_{ceiling}{metric}" for part in ("valid", "test")
                  for ceiling in ("", "ceiling_")
                  for metric in ("mrr", "hits_1", "hits_3", "hits_10", "hits_20", "hits_50",
                                 "hits_100")}
    assert {key: value for key, value in exported.items() if key not in heart_keys} == {
        f"final_{key}": value for key, value in trained.best_metrics.items()}
    assert heart_keys <= set(exported)
    ray.get(evaluate_and_export.remote(loaded, trained, TINY, Location(tmp_path / "task"),
                                        heart))
    evaluated, _ = read_final(Location(tmp_path / "task"))
    assert set(evaluated) == set(exported)
    for key, value in exported.items():
        assert evaluated[key] == pytest.approx(value, abs=1e-6)
    h_worker, h_task = (LinkScorer.load(tmp_path / where / SCORER_DIR).h
                        for where in ("work", "task"))
    torch.testing.assert_close(h_worker, h_task)
