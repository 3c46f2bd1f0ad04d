"""collab and citation2 stand-ins in OGB's layout load into the canonical form."""
from pathlib import Path

import pytest
import torch

from plnlp_core.datasets import DATASETS, load_ogb
from tests.standin import write_citation2_standin, write_collab_standin


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(tmp_path / "cache"))


def test_collab_keeps_features_edge_weights_and_years(tmp_path: Path):
    split = load_ogb(DATASETS.get("collab"), write_collab_standin(tmp_path / "data"))
    assert split.x.shape == (50, 128)
    assert split.train_pos.shape == (240, 2)
    assert split.train_weight.shape == split.train_year.shape == (240,)
    assert split.train_weight.dtype == torch.float
    assert int(split.train_year.min()) >= 2000 and int(split.train_year.max()) < 2020
    assert split.valid_pos.shape == split.valid_neg.shape == (30, 2)


def test_citation2_negatives_are_grouped_per_source(tmp_path: Path):
    split = load_ogb(DATASETS.get("citation2"), write_citation2_standin(tmp_path / "data"))
    assert split.train_weight is None and split.train_year is None
    assert split.valid_pos.shape == (30, 2)
    assert split.valid_neg.shape == (30 * 1000, 2)
    sources = split.valid_neg[:, 0].view(30, 1000)
    assert torch.equal(sources, split.valid_pos[:, :1].expand(30, 1000))
