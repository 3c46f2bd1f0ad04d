"""A stand-in written exactly as OGB ships a dataset: ``RELEASE_v1.txt``,
``raw/*.csv.gz``, an empty ``processed/`` and
``split/<type>/{train,valid,test}.pt`` (legacy torch pickles of int64 numpy
arrays)."""
import gzip
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import torch

from plnlp_core.data.datasets import DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.data.publishing import publish
from plnlp_core.data.standins.generating import draw_positives, negative_pairs, negative_targets
from plnlp_core.data.standins.sizing import (
    CHUNK,
    SPLIT_TYPES,
    StandinSize,
    check_standin_size,
    standin_info,
    standin_size,
)


def write_standin(dataset: str, root: Path, size: StandinSize | str = "tiny",
                  seed: int = 0) -> Path:
    """Writes a stand-in of ``dataset`` to ``root / "ogbl_<name>"`` exactly as
    OGB ships it: ``RELEASE_v1.txt``, ``raw/*.csv.gz``, an empty
    ``processed/`` and ``split/<type>/{train,valid,test}.pt`` (legacy torch
    pickles of int64 numpy arrays). The folder is built beside its place and
    renamed into it when complete. Refuses, before any work, a size whose
    memory estimate exceeds the available memory.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        root (Path): The data root; created if absent.
        size (StandinSize or str): A size, or a name in :obj:`SIZES`.
        seed (int): Seed of the generator; equal seeds give equal files.

    Returns:
        ``root``, a valid ``--data-root`` for ``dataset``.
    """
    info = standin_info(dataset)
    size = standin_size(dataset, size) if isinstance(size, str) else size
    check_standin_size(dataset, size)
    target = Path(root) / info.dir_name
    if target.exists():
        raise PLNLPError(f"{target} already exists; remove it or choose another folder.")
    target.parent.mkdir(parents=True, exist_ok=True)

    def write(folder: Path) -> None:
        _skeleton(folder, info, SPLIT_TYPES[info.name])
        _WRITERS[info.name](folder, size, np.random.default_rng(seed))

    if not publish(target, write):  # another process wrote it meanwhile
        raise PLNLPError(f"{target} already exists; remove it or choose another folder.")
    return Path(root)


def _skeleton(folder: Path, info: DatasetInfo, split_type: str) -> None:
    for sub in ("raw", f"split/{split_type}", "processed"):
        (folder / sub).mkdir(parents=True)
    (folder / "RELEASE_v1.txt").write_text(
        f"# Release note for {info.ogb_name}\n\n### v1\n\nJune 10, 2020: Major release\n\n")


def _write_ddi(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    _save_splits(folder / "split" / "target", _pair_splits(folder, size, rng))


def _write_ppa(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    splits = _pair_splits(folder, size, rng)
    if size.feature_dim:
        _write_csv_gz(folder / "raw" / "node-feat.csv.gz",
                      _species_one_hot(rng, size.num_nodes, size.feature_dim))
    _save_splits(folder / "split" / "throughput", splits)


def _write_collab(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    splits = _pair_splits(folder, size, rng)
    if size.feature_dim:
        _write_features(folder, rng, size.num_nodes, size.feature_dim)
    for part, (low, high) in zip(splits, ((2000, 2018), (2018, 2019), (2019, 2020)), strict=True):
        part["weight"] = rng.geometric(0.6, size=len(part["edge"])).astype(np.int64)
        part["year"] = rng.integers(low, high, size=len(part["edge"]), dtype=np.int64)
    _write_csv_gz(folder / "raw" / "edge_weight.csv.gz", [[splits[0]["weight"]]])
    _write_csv_gz(folder / "raw" / "edge_year.csv.gz", [[splits[0]["year"]]])
    _save_splits(folder / "split" / "time", splits)


def _write_citation2(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    keys, (train, valid, test) = draw_positives(rng, size, directed=True)
    _write_graph(folder, size.num_nodes, train)
    if size.feature_dim:
        _write_features(folder, rng, size.num_nodes, size.feature_dim)
    years = rng.integers(2000, 2020, size=size.num_nodes, dtype=np.int64)
    _write_csv_gz(folder / "raw" / "node_year.csv.gz", [[years]])
    split = folder / "split" / "time"
    _save(split / "train.pt", _source_target(train))
    for name, pairs, per_source in (("valid", valid, size.valid_neg),
                                    ("test", test, size.test_neg)):
        part = _source_target(pairs)
        part["target_node_neg"] = negative_targets(rng, keys, size.num_nodes,
                                                    part["source_node"], per_source)
        _save(split / f"{name}.pt", part)
        del part  # frees valid's negatives before test's are drawn


_WRITERS = {"ddi": _write_ddi, "collab": _write_collab, "ppa": _write_ppa,
            "citation2": _write_citation2}


def _pair_splits(folder: Path, size: StandinSize, rng: np.random.Generator) -> list[dict]:
    """Draws an undirected graph, writes its training edges to ``raw/`` and
    returns the ``edge``/``edge_neg`` dicts of train, valid and test."""
    keys, (train, valid, test) = draw_positives(rng, size, directed=False)
    _write_graph(folder, size.num_nodes, train)
    negatives = negative_pairs(rng, keys, size.num_nodes, size.valid_neg + size.test_neg)
    return [{"edge": train},
            {"edge": valid, "edge_neg": negatives[:size.valid_neg]},
            {"edge": test, "edge_neg": negatives[size.valid_neg:]}]


def _source_target(pairs: np.ndarray) -> dict[str, np.ndarray]:
    return {"source_node": np.ascontiguousarray(pairs[:, 0]),
            "target_node": np.ascontiguousarray(pairs[:, 1])}


def _species_one_hot(rng: np.random.Generator, num_nodes: int,
                     dim: int) -> Iterable[list[np.ndarray]]:
    """Column chunks of one-hot species (0/1 integers), species drawn Zipf-like."""
    weights = 1 / np.arange(1, dim + 1)
    rows = max(1, CHUNK // dim)
    for start in range(0, num_nodes, rows):
        species = rng.choice(dim, size=min(rows, num_nodes - start), p=weights / weights.sum())
        one_hot = np.zeros((dim, len(species)), dtype=np.int8)
        one_hot[species, np.arange(len(species))] = 1
        yield list(one_hot)


def _write_features(folder: Path, rng: np.random.Generator, num_nodes: int, dim: int) -> None:
    """Standard normal float features, four decimals, to ``raw/node-feat.csv.gz``."""
    def chunks() -> Iterable[list[np.ndarray]]:
        rows = max(1, CHUNK // dim)
        for start in range(0, num_nodes, rows):
            values = rng.normal(size=(min(rows, num_nodes - start), dim)).round(4)
            yield list(np.ascontiguousarray(values.T, dtype=np.float32))

    _write_csv_gz(folder / "raw" / "node-feat.csv.gz", chunks())


def _write_graph(folder: Path, num_nodes: int, edges: np.ndarray) -> None:
    """``raw/edge.csv.gz`` and the node and edge counts."""
    rows = CHUNK // 2
    _write_csv_gz(folder / "raw" / "edge.csv.gz",
                  ([np.ascontiguousarray(edges[i:i + rows, 0]),
                    np.ascontiguousarray(edges[i:i + rows, 1])]
                   for i in range(0, len(edges), rows)))
    _write_csv_gz(folder / "raw" / "num-node-list.csv.gz", [[np.array([num_nodes])]])
    _write_csv_gz(folder / "raw" / "num-edge-list.csv.gz", [[np.array([len(edges)])]])


def _write_csv_gz(path: Path, chunks: Iterable[Sequence[np.ndarray]]) -> None:
    """Rows of the column chunks as headerless CSV, gzip level 1 (level 9,
    pyarrow's default, takes minutes on the real sizes) with no timestamp,
    so equal content gives equal files."""
    options = pacsv.WriteOptions(include_header=False)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                compresslevel=1, mtime=0) as out:
        for columns in chunks:
            table = pa.table({str(i): column for i, column in enumerate(columns)})
            pacsv.write_csv(table, out, options)


def _save_splits(folder: Path, splits: list[dict]) -> None:
    for name, part in zip(("train", "valid", "test"), splits, strict=True):
        _save(folder / f"{name}.pt", part)


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    torch.save(arrays, path, _use_new_zipfile_serialization=False)
