"""Planetoid's citation graphs (Cora, CiteSeer, PubMed; Yang, Cohen &
Salakhutdinov 2016) as link-prediction splits, read by PyG's
:class:`~torch_geometric.datasets.Planetoid`.

The raw files are Python pickles, which PyG unpickles, and a pickle runs
code: each is checked against the digest the release publishes
(:data:`PUBLISHED_DIGESTS`: its sha256 or git blob id) before PyG reads
it, whether found under the data root or downloaded. The data root is
only read: the files are copied into a writable folder, where PyG writes
its processed cache. Where they are absent, PyG's download is tried; offline, the
refusal names the folder and the files looked for.

Link prediction on these graphs has no official split. The default is
NCN/NCNC's protocol (a new random 70/10/20 split of the undirected edges
for each run, as many random non-edges as positives in validation and
test), made by PyG's :class:`~torch_geometric.transforms.RandomLinkSplit`
and seeded by the split seed."""
import hashlib
import random
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.errors import PLNLPError, first_line

PLANETOID_FOLDER = "planetoid"
"""The folder of the data root holding ``<Name>/raw/``, as PyG lays it out."""
RAW_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
GIT_BLOB_ID_DIGITS = 40

PUBLISHED_DIGESTS = {
    "Cora": {
        "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        "ind.cora.test.index":
            "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
        "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
        "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    },
    "CiteSeer": {
        "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
        "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
        "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
        "ind.citeseer.test.index":
            "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
        "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
        "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
        "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
        "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    },
    "PubMed": {  # git's blob ids (``git ls-tree HEAD data/``), the digests the release publishes
        "ind.pubmed.allx": "3b86bccf08111c37c632a9dd8ab63db25ea76361",
        "ind.pubmed.ally": "4c8bcdc80882dd225fe4dd4fafd723baa616ac97",
        "ind.pubmed.graph": "76eb87e628a6b9d43fc31ea42c8c6c8f3e52b404",
        "ind.pubmed.test.index": "41f6befcb7750cc4858cb852f2b349a9598cb2f4",
        "ind.pubmed.tx": "eee4f3c988fde0da87a9ec7b01ca5e7863c1b1f1",
        "ind.pubmed.ty": "225a0bb9bb6430e3925d04688daf6a0da964c07a",
        "ind.pubmed.x": "16c0eca8d2b3297014ff80327416f9332eda10d7",
        "ind.pubmed.y": "e86670576c85340eeb2271b3c918bfa89322b2cf",
    },
}
"""The digest of each raw file of the Planetoid authors' release
(github.com/kimiyoung/planetoid at af6abf4, ``data/``; the same files in
github.com/tkipf/gcn's ``gcn/data/``), by graph: a sha256 (64 hex digits)
or git's blob id (40: sha1 over ``blob <size>\\0`` and the bytes, as
``git hash-object FILE`` prints it)."""


def raw_file_names(name: str) -> list[str]:
    """The raw files PyG reads for the graph ``name`` (``Cora``)."""
    return [f"ind.{name.lower()}.{part}" for part in RAW_PARTS]


def raw_folder(data_root: Path, name: str) -> Path:
    """Where the raw files of ``name`` are looked for under ``data_root``."""
    return data_root / PLANETOID_FOLDER / name / "raw"


def load_planetoid(info: DatasetInfo, data_root: Path, work_root: Path,
                   fractions: Sequence[float], seed: int) -> LinkSplit:
    """The graph ``info`` names, split by :func:`random_link_split`.

    Args:
        info: A Planetoid entry of the catalogue (``info.planetoid_name``).
        data_root: The (read-only) folder holding ``planetoid/<Name>/raw/``.
        work_root: A writable folder for the checked copy and PyG's cache.
        fractions: The train, validation and test shares of the edges.
        seed: Seeds the split and its negatives.
    """
    from torch_geometric.datasets import Planetoid

    name = info.planetoid_name
    root = checked_copy(name, raw_folder(data_root, name), work_root)
    try:
        data = Planetoid(str(root), name)[0]
    except Exception as error:  # the checked files are not what PyG expects
        raise PLNLPError(f"PyG could not read {name}'s raw files in {root / name / 'raw'} "
                         f"({first_line(error)}); copy the release's files again.") from error
    parts = random_link_split(data.edge_index, data.num_nodes, fractions, seed)
    return LinkSplit(info=info, num_nodes=data.num_nodes, x=data.x.float(), train_weight=None,
                     train_year=None, **parts)


def checked_copy(name: str, source: Path, work_root: Path) -> Path:
    """A root for PyG's ``Planetoid`` in ``work_root`` whose raw files are
    those of ``source`` (or, where absent, PyG's download), each checked
    by :func:`check_digest`; returns it."""
    root = work_root / PLANETOID_FOLDER
    raw = root / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    names = raw_file_names(name)
    missing = [file for file in names if not (source / file).is_file()]
    if missing:
        download(name, raw, source, missing)
    else:
        for file in names:
            shutil.copyfile(source / file, raw / file)
    for file in names:
        check_digest(name, raw / file, source)
    return root


def download(name: str, raw: Path, source: Path, missing: list[str]) -> None:
    """PyG's download of ``name``'s raw files into ``raw``; offline, one
    sentence naming the folder ``source`` and the files looked for."""
    from torch_geometric.datasets import Planetoid
    from torch_geometric.io import fs

    try:
        for file in raw_file_names(name):
            if not (raw / file).is_file():
                fs.cp(f"{Planetoid.url}/{file}", str(raw))
    except Exception as error:
        raise PLNLPError(f"{name} is not in {source} (looked for {', '.join(missing)}) and "
                         f"could not be downloaded ({first_line(error)}); copy Planetoid's "
                         f"raw files there, or point --data-root at the folder holding "
                         f"{PLANETOID_FOLDER}/{name}/raw.") from error


def check_digest(name: str, path: Path, source: Path) -> None:
    """Refuses ``path`` unless its digest is the one the release publishes."""
    known = PUBLISHED_DIGESTS[name][path.name]
    digest = digest_like(path.read_bytes(), known)
    if digest != known:
        kind = "git blob id" if len(known) == GIT_BLOB_ID_DIGITS else "sha256"
        raise PLNLPError(f"{source / path.name} is not the published {name} file (its {kind} "
                         f"is {digest[:16]}..., the release's {known[:16]}...); it is not "
                         "read, since PyG would unpickle it: copy the release's file again.")


def digest_like(data: bytes, known: str) -> str:
    """The digest of ``data`` of the kind ``known`` is: git's blob id where
    ``known`` has 40 hex digits, else its sha256."""
    if len(known) == GIT_BLOB_ID_DIGITS:
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return hashlib.sha256(data).hexdigest()


def random_link_split(edge_index: torch.Tensor, num_nodes: int, fractions: Sequence[float],
                      seed: int) -> dict[str, torch.Tensor]:
    """The undirected edges of ``edge_index`` split at random into
    training, validation and test positives by ``fractions`` (their shares,
    summing to 1), with as many random non-edges of the whole graph as
    positives in validation and in test: PyG's ``RandomLinkSplit``, seeded
    by ``seed`` (the same seed, the same split), as ``[M, 2]`` pairs keyed
    like :class:`LinkSplit`'s fields."""
    from torch_geometric.data import Data
    from torch_geometric.transforms import RandomLinkSplit

    split = RandomLinkSplit(num_val=fractions[1], num_test=fractions[2], is_undirected=True,
                            add_negative_train_samples=False, split_labels=True)
    with seeded(seed):
        train, valid, test = split(Data(edge_index=edge_index, num_nodes=num_nodes))
    return {"train_pos": train.pos_edge_label_index.t().contiguous(),
            "valid_pos": valid.pos_edge_label_index.t().contiguous(),
            "valid_neg": valid.neg_edge_label_index.t().contiguous(),
            "test_pos": test.pos_edge_label_index.t().contiguous(),
            "test_neg": test.neg_edge_label_index.t().contiguous()}


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Python's, NumPy's and torch's random generators seeded for the block
    (PyG's splitting and negative sampling draw from all three), and put
    back as they were afterwards."""
    states = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(states[0])
            np.random.set_state(states[1])
