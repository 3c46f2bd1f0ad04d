"""collab, citation2 and ppa stand-ins in OGB's layout load into the
canonical form; a folder that holds another dataset is refused."""
import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import NUMPY_SAFE_GLOBALS, load_ogb
from plnlp_core.errors import PLNLPError
from tests.standin import write_citation2_standin, write_collab_standin, write_ddi_standin

PPA_FEATURES = np.random.default_rng(0).integers(0, 2, size=(60, 58))


@pytest.fixture(autouse=True)
def scratch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(tmp_path / "cache"))


def write_ppa_like(root: Path) -> Path:
    """The ddi stand-in laid out as ogbl-ppa: ``split/throughput``, its
    release note, and 58 node features stored as 0/1 integers like ppa's."""
    write_ddi_standin(root)
    folder = root / "ogbl_ppa"
    (root / "ogbl_ddi").rename(folder)
    (folder / "split" / "target").rename(folder / "split" / "throughput")
    (folder / "RELEASE_v1.txt").write_text("# Release note for ogbl-ppa\n\n### v1\n")
    with gzip.open(folder / "raw" / "node-feat.csv.gz", "wt") as handle:
        handle.writelines(",".join(map(str, row)) + "\n" for row in PPA_FEATURES)
    return root


def read_part(path: Path) -> dict:
    with torch.serialization.safe_globals(NUMPY_SAFE_GLOBALS):
        return torch.load(path, weights_only=True)


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def test_collab_keeps_features_edge_weights_and_years(tmp_path: Path):
    split = load_ogb(DATASETS.get("collab"), write_collab_standin(tmp_path / "data"))
    assert split.x.shape == (50, 128)
    assert split.x.dtype == torch.float
    assert split.train_pos.shape == (240, 2)
    assert split.train_weight.shape == split.train_year.shape == (240,)
    assert split.train_weight.dtype == torch.float
    assert int(split.train_year.min()) >= 2000 and int(split.train_year.max()) < 2020
    assert split.valid_pos.shape == split.valid_neg.shape == (30, 2)


def test_collab_validation_edges_keep_their_weights_and_years(tmp_path: Path):
    root = write_collab_standin(tmp_path / "data")
    split = load_ogb(DATASETS.get("collab"), root)
    valid = read_part(root / "ogbl_collab" / "split" / "time" / "valid.pt")
    assert split.valid_weight.dtype == torch.float and split.valid_year.dtype == torch.long
    assert split.valid_weight.shape == split.valid_year.shape == (30,)
    assert torch.equal(split.valid_weight, torch.from_numpy(valid["weight"]).float())
    assert torch.equal(split.valid_year, torch.from_numpy(valid["year"]))


def test_datasets_without_validation_weights_have_none(tmp_path: Path):
    split = load_ogb(DATASETS.get("citation2"), write_citation2_standin(tmp_path / "data"))
    assert split.valid_weight is None and split.valid_year is None


def test_citation2_negatives_are_grouped_per_source(tmp_path: Path):
    split = load_ogb(DATASETS.get("citation2"), write_citation2_standin(tmp_path / "data"))
    assert split.train_weight is None and split.train_year is None
    assert split.valid_pos.shape == (30, 2)
    assert split.valid_neg.shape == (30 * 1000, 2)
    sources = split.valid_neg[:, 0].view(30, 1000)
    assert torch.equal(sources, split.valid_pos[:, :1].expand(30, 1000))


def test_ppa_integer_features_load_as_float32(tmp_path: Path):
    split = load_ogb(DATASETS.get("ppa"), write_ppa_like(tmp_path / "data"))
    assert split.x.dtype == torch.float and split.x.is_contiguous()
    assert torch.equal(split.x, torch.from_numpy(PPA_FEATURES).float())
    assert split.train_pos.shape == (320, 2)


WRITERS = {"ddi": write_ddi_standin, "collab": write_collab_standin,
           "citation2": write_citation2_standin, "ppa": write_ppa_like}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_load_reads_neither_the_raw_edge_list_nor_a_release_note_and_writes_nothing(
        tmp_path: Path, name: str):
    root = WRITERS[name](tmp_path / "data")
    folder = root / DATASETS.get(name).dir_name
    (folder / "raw" / "edge.csv.gz").unlink()
    (folder / "RELEASE_v1.txt").unlink()
    before = snapshot(root)
    split = load_ogb(DATASETS.get(name), root)
    assert snapshot(root) == before
    assert split.train_pos.size(0) > 0


def move_dataset(root: Path, source: str, target: str, keep_release: bool) -> Path:
    """Renames ``root/<source>`` to ``root/<target>``, as a user copying the
    wrong folder would."""
    shutil.move(root / source, root / target)
    if not keep_release:
        (root / target / "RELEASE_v1.txt").unlink()
    return root / target


@pytest.mark.parametrize("keep_release", [True, False], ids=["release-note", "layout-only"])
@pytest.mark.parametrize(("writer", "held", "asked"), [
    (write_ddi_standin, "ddi", "ppa"),
    (write_collab_standin, "collab", "citation2"),
    (write_citation2_standin, "citation2", "collab"),
    (write_ppa_like, "ppa", "ddi"),
    (write_collab_standin, "collab", "ppa"),
], ids=["ddi-as-ppa", "collab-as-citation2", "citation2-as-collab", "ppa-as-ddi",
        "collab-as-ppa"])
def test_a_folder_holding_another_dataset_is_refused_with_the_fix(
        tmp_path: Path, writer, held: str, asked: str, keep_release: bool):
    held_info, asked_info = DATASETS.get(held), DATASETS.get(asked)
    root = writer(tmp_path / "data")
    folder = move_dataset(root, held_info.dir_name, asked_info.dir_name, keep_release)
    with pytest.raises(PLNLPError) as caught:
        load_ogb(asked_info, root)
    message = str(caught.value)
    # the layout alone may leave two candidates (collab and citation2 share split/time)
    assert message.startswith(f"{folder} appears to hold ")
    held_names = message.split(" appears to hold ")[1].split(", not ")[0].split(" or ")
    assert held_info.ogb_name in held_names and asked_info.ogb_name not in held_names
    assert f", not {asked_info.ogb_name} (" in message
    assert message.endswith(f"point --data-root or PLNLP_DATA_ROOT at a folder whose "
                            f"{asked_info.dir_name} holds {asked_info.ogb_name}.")
    assert message.count(". ") == 0


def test_the_ddi_stand_in_copied_to_ogbl_ppa_is_refused_while_ddi_still_loads(tmp_path: Path):
    root = write_ddi_standin(tmp_path / "data")
    shutil.copytree(root / "ogbl_ddi", root / "ogbl_ppa")
    with pytest.raises(PLNLPError, match="appears to hold ogbl-ddi, not ogbl-ppa"):
        load_ogb(DATASETS.get("ppa"), root)
    assert load_ogb(DATASETS.get("ddi"), root).num_nodes == 60


def test_a_folder_of_the_right_dataset_with_the_wrong_feature_width_is_damaged(tmp_path: Path):
    root = write_collab_standin(tmp_path / "data")
    with gzip.open(root / "ogbl_collab" / "raw" / "node-feat.csv.gz", "wt") as handle:
        handle.writelines("0.5,0.25\n" for _ in range(50))
    with pytest.raises(PLNLPError, match=r"node-feat.csv.gz is 50 x 2, not 50 nodes x 128"):
        load_ogb(DATASETS.get("collab"), root)


def damaged_features() -> dict[str, bytes]:
    good = gzip.compress("".join(",".join(["0.5"] * 128) + "\n" for _ in range(50)).encode())
    return {"garbled": b"not gzip at all", "empty": gzip.compress(b""),
            "truncated": good[: len(good) // 2], "ragged": gzip.compress(b"0.5,0.5\n0.5\n")}


@pytest.mark.parametrize("damage", sorted(damaged_features()))
def test_a_damaged_feature_file_gives_one_plnlp_error_naming_it(tmp_path: Path, damage: str):
    root = write_collab_standin(tmp_path / "data")
    folder = root / "ogbl_collab"
    (folder / "raw" / "node-feat.csv.gz").write_bytes(damaged_features()[damage])
    with pytest.raises(PLNLPError, match="could not be read") as caught:
        load_ogb(DATASETS.get("collab"), root)
    message = str(caught.value)
    assert str(folder) in message and "raw/node-feat.csv.gz" in message
    assert "fresh copy" in message and len(message.splitlines()) == 1
