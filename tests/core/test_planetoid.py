"""Planetoid's graphs: the shared Cora read by PyG once its raw pickles
match the release's sha256, the refusals before any unpickling, and
NCN/NCNC's split, the same for the same seed."""
import shutil

import pytest
import torch

from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.planetoid import check_sha256, load_planetoid, raw_file_names, raw_folder
from plnlp_core.errors import PLNLPError

CORA = DATASETS.get("cora")
NCN = (0.7, 0.1, 0.2)


@pytest.fixture(scope="module")
def cora(ddi_root, tmp_path_factory):
    return load_planetoid(CORA, ddi_root, tmp_path_factory.mktemp("work"), NCN, 0)


def undirected(pairs: torch.Tensor) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in pairs.tolist()}


def test_the_shared_cora_is_read_with_its_counts_and_split_as_ncn_splits_it(cora):
    assert cora.num_nodes == 2708 and cora.x.shape == (2708, 1433)
    assert set(cora.x.unique().tolist()) == {0.0, 1.0}  # the bag of words, raw
    parts = [undirected(getattr(cora, f"{part}_pos")) for part in ("train", "valid", "test")]
    assert [len(part) for part in parts] == [3696, 527, 1055]  # 70/10/20 of 5,278 edges
    assert len(set.union(*parts)) == 5278  # disjoint
    edges = set.union(*parts)
    for part in ("valid", "test"):
        negatives = getattr(cora, f"{part}_neg")
        assert negatives.size(0) == getattr(cora, f"{part}_pos").size(0)
        assert not undirected(negatives) & edges  # none of them an edge


def test_the_same_seed_gives_the_same_split_and_another_another(ddi_root, tmp_path, cora):
    again = load_planetoid(CORA, ddi_root, tmp_path, NCN, 0)
    other = load_planetoid(CORA, ddi_root, tmp_path, NCN, 1)
    for field in ("train_pos", "valid_pos", "valid_neg", "test_pos", "test_neg"):
        assert torch.equal(getattr(again, field), getattr(cora, field))
    assert undirected(other.test_pos) != undirected(cora.test_pos)
    gae = load_planetoid(CORA, ddi_root, tmp_path, (0.85, 0.05, 0.10), 0)
    assert gae.test_pos.size(0) == 527 and gae.valid_pos.size(0) == 263  # floors of 10 %, 5 %


def copied_raw(ddi_root, tmp_path):
    shutil.copytree(raw_folder(ddi_root, "Cora"), raw_folder(tmp_path / "root", "Cora"))
    return tmp_path / "root"


def test_a_changed_byte_is_refused_before_pyg_unpickles_anything(ddi_root, tmp_path):
    root = copied_raw(ddi_root, tmp_path)
    changed = raw_folder(root, "Cora") / "ind.cora.x"
    changed.chmod(0o644)
    data = bytearray(changed.read_bytes())
    data[100] ^= 1
    changed.write_bytes(bytes(data))
    with pytest.raises(PLNLPError, match="is not the published Cora file") as error:
        load_planetoid(CORA, root, tmp_path / "work", NCN, 0)
    assert str(changed) in str(error.value)
    assert not (tmp_path / "work" / "planetoid" / "Cora" / "processed").exists()


def test_offline_the_refusal_names_the_folder_and_the_files(tmp_path, monkeypatch):
    from torch_geometric.io import fs

    def offline(*args, **kwargs):
        raise OSError("Temporary failure in name resolution")

    monkeypatch.setattr(fs, "cp", offline)
    with pytest.raises(PLNLPError, match="could not be downloaded") as error:
        load_planetoid(CORA, tmp_path / "empty", tmp_path / "work", NCN, 0)
    assert str(raw_folder(tmp_path / "empty", "Cora")) in str(error.value)
    assert all(name in str(error.value) for name in raw_file_names("Cora"))


def test_a_file_whose_sum_is_unknown_is_read_only_once_the_user_lists_it(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "ind.citeseer.x").write_bytes(b"not a release file")
    with pytest.raises(PLNLPError, match="knows no published sha256 of CiteSeer's raw file "
                                         "ind.citeseer.x") as error:
        check_sha256("CiteSeer", raw / "ind.citeseer.x", raw)
    assert "sha256sum ind.* > SHA256SUMS" in str(error.value)
    import hashlib

    digest = hashlib.sha256(b"not a release file").hexdigest()
    (raw / "SHA256SUMS").write_text(f"{digest}  ind.citeseer.x\n")
    check_sha256("CiteSeer", raw / "ind.citeseer.x", raw)  # accepted: listed by the user
