"""Synthetic stand-ins in OGB's layout: they load with the shapes of their
size, have heavy-tailed degrees and clean splits, are reproducible, refuse
sizes that do not fit in memory, and are cached safely; the CLI answers
--help without Ray or MLflow and refuses bad input with exit 2."""
import gzip
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import plnlp_core.data.standins as standins
from pipelines.standin import main as standin_main
from plnlp_core.data.datasets import DATASETS, cache_dir
from plnlp_core.data.ogb_reader import NUMPY_SAFE_GLOBALS, load_ogb
from plnlp_core.data.standins import (
    SIZES,
    SPLIT_TYPES,
    StandinSize,
    cache,
    cached_standin,
    estimate_standin_bytes,
    sizing,
    standin_size,
    write_standin,
)
from plnlp_core.errors import PLNLPError

REPO_ROOT = Path(__file__).resolve().parents[2]
SMALL_PPA = standin_size("ppa", "real", scale=3000 / 576_289)


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def read_split(folder: Path, name: str) -> dict[str, dict[str, np.ndarray]]:
    split = folder / "split" / SPLIT_TYPES[name]
    with torch.serialization.safe_globals(NUMPY_SAFE_GLOBALS):
        return {part: torch.load(split / f"{part}.pt", weights_only=True)
                for part in ("train", "valid", "test")}


def read_csv_gz(path: Path) -> np.ndarray:
    return pd.read_csv(path, header=None).to_numpy()


def undirected_keys(pairs: np.ndarray, num_nodes: int) -> np.ndarray:
    return pairs.min(axis=1) * num_nodes + pairs.max(axis=1)


@pytest.mark.parametrize("name", sorted(SPLIT_TYPES))
def test_each_tiny_standin_loads_with_the_shapes_of_its_size(tmp_path: Path, name: str):
    size = SIZES[name]["tiny"]
    split = load_ogb(DATASETS.get(name), write_standin(name, tmp_path / "data", size))
    per_positive = size.valid_neg if DATASETS.get(name).directed else None
    assert split.num_nodes == size.num_nodes
    assert split.train_pos.shape == (size.train, 2)
    assert split.valid_pos.shape == (size.valid, 2) and split.test_pos.shape == (size.test, 2)
    if per_positive:
        assert split.valid_neg.shape == (size.valid * per_positive, 2)
        assert split.test_neg.shape == (size.test * size.test_neg, 2)
    else:
        assert split.valid_neg.shape == (size.valid_neg, 2)
        assert split.test_neg.shape == (size.test_neg, 2)
    if size.feature_dim:
        assert split.x.shape == (size.num_nodes, size.feature_dim)
    else:
        assert split.x is None


def test_the_split_types_are_those_of_ogbs_master_table():
    import ogb.linkproppred

    master = pd.read_csv(Path(ogb.linkproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    for name, kind in SPLIT_TYPES.items():
        assert master[DATASETS.get(name).ogb_name]["split"] == kind


def test_the_files_have_ogbs_names_keys_and_dtypes(tmp_path: Path):
    root = write_standin("collab", tmp_path / "data", "tiny")
    folder = root / "ogbl_collab"
    assert (folder / "RELEASE_v1.txt").read_text().splitlines()[0] == (
        "# Release note for ogbl-collab")
    assert sorted(p.name for p in (folder / "raw").iterdir()) == [
        "edge.csv.gz", "edge_weight.csv.gz", "edge_year.csv.gz", "node-feat.csv.gz",
        "num-edge-list.csv.gz", "num-node-list.csv.gz"]
    assert list((folder / "processed").iterdir()) == []
    parts = read_split(folder, "collab")
    assert sorted(parts["train"]) == ["edge", "weight", "year"]
    assert sorted(parts["valid"]) == sorted(parts["test"]) == ["edge", "edge_neg", "weight",
                                                                "year"]
    for part in parts.values():
        assert all(array.dtype == np.int64 for array in part.values())
    train = parts["train"]
    assert np.array_equal(read_csv_gz(folder / "raw" / "edge.csv.gz"), train["edge"])
    assert np.array_equal(read_csv_gz(folder / "raw" / "edge_year.csv.gz")[:, 0], train["year"])
    assert read_csv_gz(folder / "raw" / "num-edge-list.csv.gz")[0, 0] == len(train["edge"])
    # legacy (non-zip) torch pickles, as OGB ships them
    assert not (folder / "split" / "time" / "train.pt").read_bytes().startswith(b"PK")


def test_ppa_features_are_one_hot_integers(tmp_path: Path):
    root = write_standin("ppa", tmp_path / "data", "tiny")
    features = read_csv_gz(root / "ogbl_ppa" / "raw" / "node-feat.csv.gz")
    assert features.dtype == np.int64 and features.shape == (100, 58)
    assert (features.sum(axis=1) == 1).all()


def test_a_small_ppa_is_heavy_tailed_with_clean_splits(tmp_path: Path):
    assert SMALL_PPA.num_nodes == 3000
    folder = write_standin("ppa", tmp_path / "data", SMALL_PPA) / "ogbl_ppa"
    parts = read_split(folder, "ppa")
    n = SMALL_PPA.num_nodes
    train = parts["train"]["edge"]
    degree = np.bincount(train.ravel(), minlength=n)
    assert degree.max() > 5 * degree.mean()
    positives = np.concatenate([parts[p]["edge"] for p in ("train", "valid", "test")])
    assert len(positives) == SMALL_PPA.positives
    assert (positives[:, 0] != positives[:, 1]).all()
    keys = undirected_keys(positives, n)
    assert len(np.unique(keys)) == len(keys)  # no duplicates, valid and test disjoint from train
    for part in ("valid", "test"):
        negatives = parts[part]["edge_neg"]
        assert (negatives[:, 0] != negatives[:, 1]).all()
        assert not np.isin(undirected_keys(negatives, n), keys).any()


def test_citation2_negatives_are_no_out_neighbours_of_their_source(tmp_path: Path):
    size = StandinSize(400, 3000, 200, 200, 50, 50, 128)
    folder = write_standin("citation2", tmp_path / "data", size) / "ogbl_citation2"
    parts = read_split(folder, "citation2")
    edges = np.concatenate([np.stack([parts[p]["source_node"], parts[p]["target_node"]], 1)
                            for p in ("train", "valid", "test")])
    keys = edges[:, 0] * 400 + edges[:, 1]
    assert len(np.unique(keys)) == len(keys) and (edges[:, 0] != edges[:, 1]).all()
    valid = parts["valid"]
    assert valid["target_node_neg"].shape == (200, 50)
    negatives = valid["source_node"][:, None] * 400 + valid["target_node_neg"]
    assert not np.isin(negatives, keys).any()
    assert (valid["target_node_neg"] != valid["source_node"][:, None]).all()


def test_the_same_seed_gives_identical_files_and_another_seed_other_edges(tmp_path: Path):
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}

    first = files(write_standin("ppa", tmp_path / "a", SMALL_PPA, seed=3))
    assert first == files(write_standin("ppa", tmp_path / "b", SMALL_PPA, seed=3))
    other = files(write_standin("ppa", tmp_path / "c", SMALL_PPA, seed=4))
    assert other["ogbl_ppa/raw/edge.csv.gz"] != first["ogbl_ppa/raw/edge.csv.gz"]


def test_scale_shrinks_counts_but_not_negatives_per_source():
    ppa = standin_size("ppa", "real", scale=0.01)
    assert (ppa.num_nodes, ppa.train, ppa.valid_neg, ppa.feature_dim) == (5763, 212319, 30000, 58)
    citation2 = standin_size("citation2", "real", scale=0.01)
    assert citation2.valid == 866 and citation2.valid_neg == 1000
    assert standin_size("ddi") == SIZES["ddi"]["tiny"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: standin_size("wikics"), "unknown dataset 'wikics'"),
    (lambda: standin_size("ppa", "huge"), "unknown stand-in size 'huge'"),
    (lambda: standin_size("ppa", "real", scale=0), "scale must be a positive number"),
    (lambda: write_standin("ddi", Path("unused"), StandinSize(10, 30, 1, 1, 1, 1)),
     "use at most half"),
])
def test_bad_sizes_are_refused_with_one_sentence(call, message: str):
    with pytest.raises(PLNLPError, match=message):
        call()


def test_an_absurd_size_is_refused_with_its_estimate_before_any_work(tmp_path: Path):
    assert standins.available_memory_bytes() > 0  # MemAvailable of /proc/meminfo
    absurd = StandinSize(10**9, 10**12, 10**9, 10**9, 10**9, 10**9, 58)
    estimate = estimate_standin_bytes("ppa", absurd)
    with pytest.raises(PLNLPError) as caught:
        write_standin("ppa", tmp_path / "data", absurd)
    message = str(caught.value)
    assert f"about {estimate / 2**30:.1f} GiB" in message and "is available" in message
    assert "1,000,000,000 nodes" in message and "smaller size or scale" in message
    assert not (tmp_path / "data").exists()
    with pytest.raises(PLNLPError, match="GiB of memory"):
        cached_standin("ppa", absurd)
    assert not cache_dir().exists()


def test_the_estimate_grows_with_the_size_and_covers_the_real_ppa_peak():
    real = SIZES["ppa"]["real"]
    assert estimate_standin_bytes("ppa", SMALL_PPA) < estimate_standin_bytes("ppa", real)
    # generating the real ppa peaked 1.9 GiB above the interpreter's 0.45 GiB
    assert 1.9 * 2**30 < estimate_standin_bytes("ppa", real) < 3 * 2**30


def test_an_existing_dataset_folder_is_refused(tmp_path: Path):
    root = write_standin("ddi", tmp_path / "data")
    with pytest.raises(PLNLPError, match="ogbl_ddi already exists"):
        write_standin("ddi", root)


def test_cached_standin_reuses_a_complete_folder(capsys: pytest.CaptureFixture):
    root = cached_standin("ddi", "tiny", seed=1)
    assert "generating" in capsys.readouterr().out
    edges = root / "ogbl_ddi" / "raw" / "edge.csv.gz"
    written = edges.stat().st_mtime_ns
    assert cached_standin("ddi", "tiny", seed=1) == root
    assert "reusing" in capsys.readouterr().out
    assert edges.stat().st_mtime_ns == written
    assert root.parent == cache_dir() / "standins"
    assert cached_standin("ddi", "tiny", seed=2) != root
    assert load_ogb(DATASETS.get("ddi"), root).train_pos.shape == (320, 2)


def test_cached_standin_replaces_a_dead_scratch_folder_and_keeps_a_live_one():
    key = cached_standin("ddi").name
    final = cache_dir() / "standins" / key
    final.rename(final.with_name("elsewhere"))
    host = socket.gethostname()
    dead = final.with_name(f"{key}.partial-{host}-999999999-0000")  # beyond any pid_max
    live = final.with_name(f"{key}.partial-{host}-{os.getpid()}-0000")
    for scratch in (dead, live):
        (scratch / "ogbl_ddi" / "raw").mkdir(parents=True)
        (scratch / "ogbl_ddi" / "raw" / "edge.csv.gz").write_bytes(gzip.compress(b"0,1\n"))
    root = cached_standin("ddi")
    assert root == final and not dead.exists() and live.exists()
    assert load_ogb(DATASETS.get("ddi"), root).train_pos.shape == (320, 2)


def test_the_loser_of_a_race_discards_its_copy_and_uses_the_winners(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    final = cache_dir() / "standins" / cache._cache_key(DATASETS.get("ddi"),
                                                         SIZES["ddi"]["tiny"], 0)
    write = cache.write_standin

    def racing(dataset: str, root: Path, size: StandinSize, seed: int) -> Path:
        write(dataset, final, size, seed)  # another process finishes first
        return write(dataset, root, size, seed)

    monkeypatch.setattr(cache, "write_standin", racing)
    assert cached_standin("ddi") == final
    assert "another process wrote" in capsys.readouterr().out
    assert sorted(p.name for p in final.parent.iterdir()) == [final.name]


def test_the_cli_help_imports_neither_ray_nor_mlflow_nor_torch():
    probe = ("import runpy, sys\n"
             "sys.argv = ['pipelines/standin.py', '--help']\n"
             "try:\n    runpy.run_path('pipelines/standin.py', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'mlflow', 'torch'}))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=60, check=True)
    assert "--dataset" in result.stdout and result.stdout.strip().endswith("[]")


@pytest.mark.parametrize(("argv", "expected"), [
    (["--dataset", "wikics"], "error: unknown dataset 'wikics'; choose one of: citation2, "),
    (["--dataset", "ppa", "--size", "huge"], "error: unknown stand-in size 'huge'"),
    (["--dataset", "ppa", "--size", "real", "--scale", "1000"],
     "error: the ogbl-ppa stand-in of 576,289,000 nodes and 21,231,931,000 training edges "
     "needs about"),
])
def test_the_cli_refuses_bad_input_with_exit_2_and_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
        argv: list[str], expected: str):
    monkeypatch.setattr(sizing, "available_memory_bytes", lambda: 16 * 2**30)
    assert standin_main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(expected) and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_cli_writes_a_data_root_and_refuses_to_overwrite_it(
        tmp_path: Path, capsys: pytest.CaptureFixture):
    argv = ["--dataset", "ppa", "--size", "real", "--scale", "0.002", "--out", str(tmp_path)]
    assert standin_main(argv) == 0
    out = capsys.readouterr().out
    assert "wrote 1,153 nodes" in out and f"--data-root {tmp_path}" in out
    assert load_ogb(DATASETS.get("ppa"), tmp_path).x.shape == (1153, 58)
    assert standin_main(argv) == 2
    assert "ogbl_ppa already exists" in capsys.readouterr().err
