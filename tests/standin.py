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
