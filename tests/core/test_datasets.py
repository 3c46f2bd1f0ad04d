"""Loading OGB datasets: a read-only root is only read, a missing or broken
dataset gives one PLNLPError that says what to do, and a split file that
carries code is refused without running it."""
import gzip
import os
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pytest
import torch

from plnlp_core.data.datasets import DATASETS, cache_dir, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.errors import PLNLPError
from tests.standin import write_ddi_standin

DDI = DATASETS.get("ddi")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Points PLNLP_CACHE_DIR at a fresh folder for every test."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(cache))
    return cache


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root`` with its size, mtime and mode."""
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns, p.lstat().st_mode)
            for p in sorted(root.rglob("*"))}


def set_read_only(root: Path, read_only: bool) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555 if read_only else 0o755)
        else:
            path.chmod(0o444 if read_only else 0o644)


@pytest.fixture
def read_only_standin(tmp_path: Path):
    root = write_ddi_standin(tmp_path / "data")
    set_read_only(root, True)
    yield root
    set_read_only(root, False)


def test_load_ogb_reads_the_standin_with_its_written_shapes(read_only_standin):
    split = load_ogb(DDI, read_only_standin)
    # write_ddi_standin defaults: 60 nodes, 400 edges split 320 / 40 / 40,
    # 40 negatives each for valid and test
    assert split.num_nodes == 60
    assert split.x is None
    assert split.train_pos.shape == (320, 2)
    assert split.valid_pos.shape == split.valid_neg.shape == (40, 2)
    assert split.test_pos.shape == split.test_neg.shape == (40, 2)
    for pairs in (split.train_pos, split.valid_pos, split.test_neg):
        assert pairs.dtype == torch.long
        assert 0 <= int(pairs.min()) and int(pairs.max()) < 60
    assert split.train_weight is None and split.train_year is None


def test_load_ogb_returns_the_edges_of_the_split_files(read_only_standin):
    split = load_ogb(DDI, read_only_standin)
    target = read_only_standin / "ogbl_ddi" / "split" / "target"
    with torch.serialization.safe_globals([np._core.multiarray._reconstruct, np.ndarray,
                                           np.dtype, np.dtypes.Int64DType]):
        train = torch.load(target / "train.pt")
        valid = torch.load(target / "valid.pt")
    assert torch.equal(split.train_pos, torch.from_numpy(train["edge"]))
    assert torch.equal(split.valid_neg, torch.from_numpy(valid["edge_neg"]))


def test_load_ogb_writes_nothing_into_a_read_only_root(read_only_standin):
    # chmod alone does not stop root (CI may run as root), so compare too
    before = snapshot(read_only_standin)
    load_ogb(DDI, read_only_standin)
    assert snapshot(read_only_standin) == before
    assert not any((read_only_standin / "ogbl_ddi" / "processed").iterdir())


def test_load_ogb_writes_nothing_into_the_cache(read_only_standin, scratch_cache):
    load_ogb(DDI, read_only_standin)
    assert cache_dir() == scratch_cache
    assert not scratch_cache.exists() or list(scratch_cache.iterdir()) == []


@pytest.mark.parametrize("damage", ["deleted", "garbled"])
def test_load_ogb_never_reads_the_raw_edge_list(tmp_path, damage):
    root = write_ddi_standin(tmp_path / "data")
    expected = load_ogb(DDI, root)
    edge_list = root / "ogbl_ddi" / "raw" / "edge.csv.gz"
    if damage == "deleted":
        edge_list.unlink()
    else:
        edge_list.write_bytes(b"not gzip at all")
    before = snapshot(root)
    split = load_ogb(DDI, root)
    assert snapshot(root) == before
    assert torch.equal(split.train_pos, expected.train_pos)
    assert torch.equal(split.test_neg, expected.test_neg)


def test_missing_dataset_without_network_names_the_path_and_how_to_supply_it(
        tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    root = tmp_path / "empty"
    with pytest.raises(PLNLPError) as caught:
        load_ogb(DDI, root)
    message = str(caught.value)
    assert str(root / "ogbl_ddi") in message
    assert "PLNLP_DATA_ROOT" in message and "copy" in message
    assert not (root / "ogbl_ddi").exists()


def test_a_download_that_needs_an_answer_on_stdin_is_refused_with_a_way_out(
        tmp_path, monkeypatch):
    def asks(*args, **kwargs):
        raise EOFError("EOF when reading a line")  # OGB's input() for downloads over 1 GB

    monkeypatch.setattr("ogb.linkproppred.LinkPropPredDataset", asks)
    with pytest.raises(PLNLPError, match="asks before downloading over 1 GB") as caught:
        load_ogb(DDI, tmp_path / "empty")
    assert "PLNLP_DATA_ROOT" in str(caught.value)


@pytest.mark.parametrize("name", ["train.pt", "valid.pt", "test.pt"])
@pytest.mark.parametrize("content", [b"\x80\x02garbage\xff\x00 bytes" * 8, b""],
                         ids=["garbage", "empty"])
def test_corrupt_split_file_gives_plnlp_error_naming_the_folder(tmp_path, name, content):
    root = write_ddi_standin(tmp_path / "data")
    (root / "ogbl_ddi" / "split" / "target" / name).write_bytes(content)
    with pytest.raises(PLNLPError) as caught:
        load_ogb(DDI, root)
    assert str(root / "ogbl_ddi") in str(caught.value)
    assert "fresh copy" in str(caught.value)


@pytest.mark.parametrize("content", [b"not gzip at all", gzip.compress(b""),
                                     gzip.compress(b"4267\n")[:12], gzip.compress(b"many\n")],
                         ids=["garbled", "empty", "truncated", "not-a-number"])
def test_damaged_node_count_gives_plnlp_error_naming_the_file(tmp_path, content):
    root = write_ddi_standin(tmp_path / "data")
    (root / "ogbl_ddi" / "raw" / "num-node-list.csv.gz").write_bytes(content)
    with pytest.raises(PLNLPError, match="could not be read") as caught:
        load_ogb(DDI, root)
    assert "raw/num-node-list.csv.gz" in str(caught.value)
    assert "fresh copy" in str(caught.value)


def test_a_node_count_below_the_split_s_nodes_gives_plnlp_error(tmp_path):
    root = write_ddi_standin(tmp_path / "data")
    (root / "ogbl_ddi" / "raw" / "num-node-list.csv.gz").write_bytes(gzip.compress(b"10\n"))
    with pytest.raises(PLNLPError, match=r"names nodes outside 0\.\.9"):
        load_ogb(DDI, root)


@pytest.mark.parametrize("missing", ["split/target", "split/target/valid.pt",
                                     "raw/num-node-list.csv.gz"])
def test_missing_part_of_the_folder_gives_plnlp_error_naming_it(tmp_path, missing):
    root = write_ddi_standin(tmp_path / "data")
    path = root / "ogbl_ddi" / missing
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    with pytest.raises(PLNLPError, match="could not be read") as caught:
        load_ogb(DDI, root)
    assert f"{missing} is missing" in str(caught.value)


def test_truncated_split_file_gives_plnlp_error_naming_it(tmp_path):
    root = write_ddi_standin(tmp_path / "data")
    train = root / "ogbl_ddi" / "split" / "target" / "train.pt"
    train.write_bytes(train.read_bytes()[:-100])
    with pytest.raises(PLNLPError, match="split/target/train.pt is truncated"):
        load_ogb(DDI, root)


def test_split_file_of_the_wrong_shape_gives_plnlp_error(tmp_path):
    root = write_ddi_standin(tmp_path / "data")
    edges = np.zeros((4, 3), dtype=np.int64)
    valid = root / "ogbl_ddi" / "split" / "target" / "valid.pt"
    torch.save({"edge": edges, "edge_neg": edges}, valid)
    with pytest.raises(PLNLPError, match=r"'edge' is \(4, 3\), not \[M, 2\]"):
        load_ogb(DDI, root)


class Payload:
    """Unpickling this runs ``touch <marker>``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("name", ["train.pt", "valid.pt", "test.pt", "split_dict.pt"])
@pytest.mark.parametrize("legacy", [True, False], ids=["legacy", "zipfile"])
def test_split_file_carrying_code_is_refused_and_never_runs(tmp_path, name, legacy):
    root = write_ddi_standin(tmp_path / "data")
    marker = tmp_path / "payload-ran"
    edges = np.zeros((4, 2), dtype=np.int64)
    torch.save({"edge": edges, "edge_neg": edges, "x": Payload(marker)},
               root / "ogbl_ddi" / "split" / "target" / name,
               _use_new_zipfile_serialization=not legacy)
    with pytest.raises(PLNLPError, match="could not be read"):
        load_ogb(DDI, root)
    assert not marker.exists()


def test_resolve_data_root_prefers_argument_then_environment_then_data(monkeypatch):
    monkeypatch.setenv("PLNLP_DATA_ROOT", "/from/env")
    assert resolve_data_root("/given") == Path("/given")
    assert resolve_data_root(None) == Path("/from/env")
    monkeypatch.delenv("PLNLP_DATA_ROOT")
    assert resolve_data_root(None) == Path("data")


def real_data_root() -> Path:
    """``$PLNLP_DATA_ROOT`` (relative to the repository root), else the
    shared datasets folder beside the repository."""
    configured = os.environ.get("PLNLP_DATA_ROOT")
    if configured:
        path = Path(configured)
        return path if path.is_absolute() else REPO_ROOT / path
    return Path(__file__).resolve().parents[3] / "shared" / "datasets"


@pytest.mark.slow
def test_real_ddi_has_the_published_sizes():
    root = real_data_root()
    assert (root / "ogbl_ddi").is_dir(), (
        f"the real ogbl-ddi is not at {root / 'ogbl_ddi'}; set PLNLP_DATA_ROOT to the folder "
        "that holds OGB's ogbl_ddi (CI uses ../shared/datasets)")
    before = snapshot(root / "ogbl_ddi")
    split = load_ogb(DDI, root)
    assert split.num_nodes == 4267
    assert split.x is None
    assert split.train_pos.shape == (1067911, 2)
    assert split.valid_pos.shape == (133489, 2)
    assert split.valid_neg.shape == (101882, 2)
    assert split.test_pos.shape == (133489, 2)
    assert split.test_neg.shape == (95599, 2)
    assert int(split.train_pos.max()) < 4267 and int(split.train_pos.min()) >= 0
    assert snapshot(root / "ogbl_ddi") == before
