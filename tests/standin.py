"""Small stand-ins for OGB datasets, written in OGB's exact on-disk layout."""
import gzip
from pathlib import Path

import numpy as np
import torch


def write_ddi_standin(root: Path, num_nodes: int = 60, num_edges: int = 400, seed: int = 0) -> Path:
    """Writes a random ``ogbl_ddi`` under ``root`` laid out as OGB ships it:
    ``raw/*.csv.gz``, ``split/target/{train,valid,test}.pt`` (legacy torch
    pickles of numpy arrays), ``RELEASE_v1.txt``. Returns ``root``."""
    rng = np.random.default_rng(seed)
    pairs = set()
    while len(pairs) < num_edges:
        u, v = rng.integers(num_nodes, size=2)
        if u != v:
            pairs.add((min(u, v), max(u, v)))
    edges = rng.permutation(np.array(sorted(pairs), dtype=np.int64))
    n_valid = n_test = num_edges // 10
    train, valid, test = np.split(edges, [num_edges - n_valid - n_test, num_edges - n_test])
    folder = root / "ogbl_ddi"
    (folder / "raw").mkdir(parents=True)
    (folder / "split" / "target").mkdir(parents=True)
    (folder / "processed").mkdir()
    (folder / "RELEASE_v1.txt").write_text("# Release note for ogbl-ddi\n\n### v1\n")
    _write_csv_gz(folder / "raw" / "edge.csv.gz", [f"{u},{v}" for u, v in train])
    _write_csv_gz(folder / "raw" / "num-node-list.csv.gz", [str(num_nodes)])
    _write_csv_gz(folder / "raw" / "num-edge-list.csv.gz", [str(len(train))])
    negatives = _non_edges(rng, num_nodes, pairs, 2 * n_valid)
    _save(folder / "split" / "target" / "train.pt", {"edge": train})
    valid_split = {"edge": valid, "edge_neg": negatives[:n_valid]}
    _save(folder / "split" / "target" / "valid.pt", valid_split)
    _save(folder / "split" / "target" / "test.pt", {"edge": test, "edge_neg": negatives[n_valid:]})
    return root


def write_collab_standin(root: Path, num_nodes: int = 50, num_edges: int = 300,
                         seed: int = 0) -> Path:
    """Writes a random ``ogbl_collab`` under ``root`` in OGB's layout: node
    features (128), edge weights and years in ``raw/``, and the ``time``
    split with ``edge``/``weight``/``year`` (and ``edge_neg``). Returns ``root``."""
    rng = np.random.default_rng(seed)
    edges = _random_edges(rng, num_nodes, num_edges)
    years = rng.integers(2000, 2020, size=num_edges).astype(np.int64)
    weights = rng.integers(1, 4, size=num_edges).astype(np.int64)
    train, valid, test = np.split(np.arange(num_edges), [num_edges * 8 // 10, num_edges * 9 // 10])
    folder = _skeleton(root, "ogbl_collab", "time")
    _write_csv_gz(folder / "raw" / "edge.csv.gz", [f"{u},{v}" for u, v in edges[train]])
    _write_features(folder, rng, num_nodes, 128)
    _write_csv_gz(folder / "raw" / "edge_weight.csv.gz", [str(w) for w in weights[train]])
    _write_csv_gz(folder / "raw" / "edge_year.csv.gz", [str(y) for y in years[train]])
    _write_counts(folder, num_nodes, len(train))
    negatives = _non_edges(rng, num_nodes, {tuple(e) for e in edges.tolist()}, 2 * len(valid))
    for name, index, neg in (("train", train, None), ("valid", valid, negatives[:len(valid)]),
                             ("test", test, negatives[len(valid):])):
        part = {"edge": edges[index], "weight": weights[index], "year": years[index]}
        if neg is not None:
            part["edge_neg"] = neg
        _save(folder / "split" / "time" / f"{name}.pt", part)
    return root


def write_citation2_standin(root: Path, num_nodes: int = 50, num_edges: int = 300,
                            num_neg: int = 1000, seed: int = 0) -> Path:
    """Writes a random ``ogbl_citation2`` under ``root`` in OGB's layout:
    directed edges, node features (128) and years, and the ``time`` split
    with ``source_node``/``target_node`` (and ``target_node_neg`` of
    ``num_neg`` per source). Returns ``root``."""
    rng = np.random.default_rng(seed)
    edges = _random_edges(rng, num_nodes, num_edges, directed=True)
    train, valid, test = np.split(np.arange(num_edges), [num_edges * 8 // 10, num_edges * 9 // 10])
    folder = _skeleton(root, "ogbl_citation2", "time")
    _write_csv_gz(folder / "raw" / "edge.csv.gz", [f"{u},{v}" for u, v in edges[train]])
    _write_features(folder, rng, num_nodes, 128)
    _write_csv_gz(folder / "raw" / "node_year.csv.gz",
                  [str(y) for y in rng.integers(2000, 2020, size=num_nodes)])
    _write_counts(folder, num_nodes, len(train))
    for name, index in (("train", train), ("valid", valid), ("test", test)):
        part = {"source_node": edges[index, 0], "target_node": edges[index, 1]}
        if name != "train":
            part["target_node_neg"] = rng.integers(num_nodes, size=(len(index), num_neg))
        _save(folder / "split" / "time" / f"{name}.pt", part)
    return root


def _random_edges(rng: np.random.Generator, num_nodes: int, count: int,
                  directed: bool = False) -> np.ndarray:
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < count:
        u, v = (int(a) for a in rng.integers(num_nodes, size=2))
        if u != v:
            pairs.add((u, v) if directed else (min(u, v), max(u, v)))
    return rng.permutation(np.array(sorted(pairs), dtype=np.int64))


def _skeleton(root: Path, dir_name: str, split: str) -> Path:
    folder = root / dir_name
    for sub in ("raw", f"split/{split}", "processed"):
        (folder / sub).mkdir(parents=True)
    (folder / "RELEASE_v1.txt").write_text(f"# Release note for {dir_name}\n\n### v1\n")
    return folder


def _write_features(folder: Path, rng: np.random.Generator, num_nodes: int, dim: int) -> None:
    rows = rng.normal(size=(num_nodes, dim)).astype(np.float32)
    _write_csv_gz(folder / "raw" / "node-feat.csv.gz",
                  [",".join(f"{v:.4f}" for v in row) for row in rows])


def _write_counts(folder: Path, num_nodes: int, num_edges: int) -> None:
    _write_csv_gz(folder / "raw" / "num-node-list.csv.gz", [str(num_nodes)])
    _write_csv_gz(folder / "raw" / "num-edge-list.csv.gz", [str(num_edges)])


def _non_edges(rng: np.random.Generator, num_nodes: int, edges: set, count: int) -> np.ndarray:
    found: list[tuple[int, int]] = []
    while len(found) < count:
        u, v = (int(a) for a in rng.integers(num_nodes, size=2))
        if u != v and (min(u, v), max(u, v)) not in edges:
            found.append((u, v))
    return np.array(found, dtype=np.int64)


def _write_csv_gz(path: Path, lines: list[str]) -> None:
    with gzip.open(path, "wt") as handle:
        handle.write("\n".join(lines) + "\n")


def _save(path: Path, arrays: dict) -> None:
    torch.save(arrays, path, _use_new_zipfile_serialization=False)
