"""write_split / read_split round-trip a LinkSplit exactly, without Ray."""
import warnings
from dataclasses import fields
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from components.storage.parquet_io import read_split, write_split
from components.storage.split_meta import DatasetMeta
from plnlp_core.data.datasets import DATASETS, LinkSplit
from plnlp_core.data.ogb_reader import load_ogb
from tests.standin import write_citation2_standin, write_collab_standin, write_ddi_standin

WRITERS = {"ddi": write_ddi_standin, "collab": write_collab_standin,
           "citation2": write_citation2_standin}


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(tmp_path / "cache"))


def assert_same_split(again: LinkSplit, split: LinkSplit) -> None:
    for field in fields(LinkSplit):
        before, after = getattr(split, field.name), getattr(again, field.name)
        if isinstance(before, torch.Tensor):
            assert isinstance(after, torch.Tensor), field.name
            assert after.dtype == before.dtype and torch.equal(after, before), field.name
        else:
            assert after == before, field.name


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_write_then_read_gives_back_the_same_split(tmp_path: Path, name: str):
    split = load_ogb(DATASETS.get(name), WRITERS[name](tmp_path / "data"))
    directory = tmp_path / "splits"
    directory.mkdir()
    meta = write_split(split, directory)
    assert meta == DatasetMeta.read(directory)
    assert_same_split(read_split(directory), split)


def test_collab_validation_weights_and_years_are_columns_of_valid_pos(tmp_path: Path):
    split = load_ogb(DATASETS.get("collab"), write_collab_standin(tmp_path / "data"))
    directory = tmp_path / "splits"
    directory.mkdir()
    write_split(split, directory)
    table = pq.read_table(directory / "valid_pos.parquet")
    assert table.column_names == ["src", "dst", "weight", "year"]
    assert table.column("weight").to_pylist() == split.valid_weight.tolist()
    assert table.column("year").to_pylist() == split.valid_year.tolist()
    again = read_split(directory)
    assert torch.equal(again.valid_weight, split.valid_weight)
    assert torch.equal(again.valid_year, split.valid_year)


def test_a_split_without_validation_weights_writes_only_the_pairs(tmp_path: Path):
    split = load_ogb(DATASETS.get("ddi"), write_ddi_standin(tmp_path / "data"))
    directory = tmp_path / "splits"
    directory.mkdir()
    write_split(split, directory)
    for name in ("valid_pos", "valid_neg", "test_pos", "test_neg"):
        assert pq.read_table(directory / f"{name}.parquet").column_names == ["src", "dst"]
    again = read_split(directory)
    assert again.valid_weight is None and again.valid_year is None


def test_read_tensors_own_writable_memory(tmp_path: Path):
    split = load_ogb(DATASETS.get("collab"), write_collab_standin(tmp_path / "data"))
    directory = tmp_path / "splits"
    directory.mkdir()
    write_split(split, directory)
    with warnings.catch_warnings():
        # torch warns when a tensor would wrap Arrow's read-only memory
        warnings.simplefilter("error", UserWarning)
        again = read_split(directory)
    for tensor in (again.x, again.train_pos, again.train_weight, again.valid_year):
        tensor.add_(0)
