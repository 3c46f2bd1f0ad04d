"""The training graph the load stage writes as .npy files: memory-mapped, it is
the graph each worker would build from the training edges."""
import dataclasses
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from components.storage.graph_files import (
    COL_FILE,
    CROW_FILE,
    FEATURES_FILE,
    read_adjacency,
    read_features,
    write_graph_files,
)
from components.storage.parquet_io import read_split, write_split
from plnlp_core.assembly import build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, LinkSplit
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import TrainingGraph, append_pairs, build_adjacency
from tests.standin import write_collab_standin

CONFIG = PLNLPConfig(loss="weighted_hinge_auc")  # margins too


@pytest.fixture
def directory(ddi_standin_split: LinkSplit, tmp_path: Path) -> Path:
    write_split(ddi_standin_split, tmp_path)
    return tmp_path


def assert_same_csr(adj: torch.Tensor, expected: torch.Tensor) -> None:
    for part in ("crow_indices", "col_indices", "values"):
        ours, theirs = getattr(adj, part)(), getattr(expected, part)()
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), part
    assert adj.shape == expected.shape


def assert_same_graph(graph: TrainingGraph, expected: TrainingGraph) -> None:
    assert_same_csr(graph.adj, expected.adj)
    for name in ("degree", "positives", "weights"):
        assert torch.equal(getattr(graph, name), getattr(expected, name)), name


def mapped_files() -> str:
    return Path("/proc/self/maps").read_text()


def test_the_mapped_csr_is_build_adjacency_of_the_training_edges(ddi_standin_split, directory):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns on wrapping a read-only array
        adj, degree = read_adjacency(directory, ddi_standin_split.num_nodes)
    expected, expected_degree = build_adjacency(ddi_standin_split.train_pos,
                                                ddi_standin_split.num_nodes)
    assert_same_csr(adj, expected)
    assert degree.dtype == expected_degree.dtype and torch.equal(degree, expected_degree)
    assert str(directory / COL_FILE) in mapped_files()  # shared pages, not a copy


def test_a_worker_s_graph_from_the_files_is_the_one_built_from_edges(directory):
    split = read_split(directory)
    adjacency = read_adjacency(directory, split.num_nodes)
    graph = build_training_graph(split, CONFIG, rank=1, world_size=2, adjacency=adjacency)
    assert_same_graph(graph, build_training_graph(split, CONFIG, rank=1, world_size=2))
    assert graph.adj.col_indices().data_ptr() == adjacency[0].col_indices().data_ptr()


def test_valid_as_input_builds_its_own_graph(directory):
    split = read_split(directory)
    config = CONFIG.replace(valid_as_input=True)
    graph = build_training_graph(split, config, adjacency=read_adjacency(directory,
                                                                          split.num_nodes))
    edges, _ = append_pairs(split.train_pos, None, split.valid_pos, None)
    expected, degree = build_adjacency(edges, split.num_nodes)
    assert_same_csr(graph.adj, expected)
    assert torch.equal(graph.degree, degree)


def test_mapped_features_are_copy_on_write(tmp_path):
    split = load_ogb(DATASETS.get("collab"), write_collab_standin(tmp_path / "data"))
    write_split(split, tmp_path)
    x = read_split(tmp_path).x
    x.add_(1)  # a private copy of the pages written; the file is unchanged
    assert torch.equal(read_split(tmp_path).x, split.x)
    assert torch.equal(x, split.x + 1)


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def replace_with_another(path: Path) -> None:
    np.save(path, np.zeros(3, dtype=np.int32))


@pytest.mark.parametrize(("damage", "problem"), [
    (Path.unlink, "no such file"),
    (truncate, "not a .npy array: "),
    (replace_with_another, "int32 of shape [3], not int64 of shape [61]"),
])
def test_a_missing_or_damaged_file_is_refused_naming_it_and_the_fix(directory, damage, problem):
    path = directory / CROW_FILE
    damage(path)
    with pytest.raises(PLNLPError, match=re.escape(f"{path} is missing or damaged ({problem}")) \
            as caught:
        read_adjacency(directory, 60)
    assert str(caught.value).endswith(f"; delete {directory} to rebuild it.")


def test_sparse_features_are_written_as_their_entries_and_read_back_sparse(
        ddi_standin_split: LinkSplit, tmp_path: Path):
    """No nodes x features file: the entries and their values, mapped back
    into the same sparse tensor."""
    n = ddi_standin_split.num_nodes
    x = torch.zeros(n, 1000)
    x[torch.arange(n), torch.arange(n) * 7 % 1000] = 1.0
    x[0, 3] = 2.5
    split = dataclasses.replace(ddi_standin_split, x=x.to_sparse())
    write_graph_files(split, tmp_path)
    assert not (tmp_path / FEATURES_FILE).exists()
    read = read_features(tmp_path, n, 1000)
    assert read.is_sparse and torch.equal(read.to_dense(), x)
