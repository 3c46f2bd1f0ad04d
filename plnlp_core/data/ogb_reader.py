"""OGB link-prediction datasets, read from OGB's own on-disk layout into one
canonical form, :class:`LinkSplit`.

Only what a split needs is read: ``raw/num-node-list.csv.gz``,
``raw/node-feat.csv.gz`` and ``split/<type>/{train,valid,test}.pt`` (or
``split_dict.pt``), where ``<type>`` comes from OGB's ``master.csv``. OGB's
raw edge list and its processed cache are never touched (the training
edges are those of ``train.pt``), and nothing is written unless the dataset
has to be downloaded."""
import functools
import gzip
import importlib.util
import pickle
import re
import shutil
import struct
import urllib.error
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import torch
from numpy import dtypes
from torch import Tensor

from plnlp_core.data.datasets import DATASETS, SPLIT_PARTS, DatasetInfo, LinkSplit
from plnlp_core.errors import PLNLPError, first_line

# The globals OGB's pickled numpy arrays name; nothing else may be unpickled.
NUMPY_SAFE_GLOBALS = [
    (np._core.multiarray._reconstruct, "numpy.core.multiarray._reconstruct"),
    np._core.multiarray._reconstruct,
    np.ndarray,
    np.dtype,
    dtypes.Int64DType,
    dtypes.Int32DType,
    dtypes.Float32DType,
    dtypes.Float64DType,
    dtypes.BoolDType,
]

# What can go wrong reading a damaged folder; each becomes one PLNLPError.
_UNREADABLE = (OSError, EOFError, RuntimeError, KeyError, ValueError, pickle.UnpicklingError,
               zlib.error, pa.ArrowException)
# What torch.load raises on a damaged or hostile file (its unpickler is plain Python).
_BAD_PICKLE = (EOFError, RuntimeError, pickle.UnpicklingError, ValueError, LookupError,
               TypeError, AttributeError, OverflowError, struct.error)
# What a damaged gzip CSV raises.
_BAD_GZIP_CSV = (OSError, EOFError, ValueError, zlib.error, pa.ArrowException)


@functools.cache
def ogb_master() -> pd.DataFrame:
    """OGB's own table of link datasets (``ogb/linkproppred/master.csv``),
    one column per dataset, as ``LinkPropPredDataset`` reads it."""
    path = Path(importlib.util.find_spec("ogb.linkproppred").origin).with_name("master.csv")
    return pd.read_csv(path, index_col=0, keep_default_na=False)


def split_type(info: DatasetInfo) -> str:
    """The folder under ``split/`` that holds ``info``'s split (``"target"``)."""
    return str(ogb_master()[info.ogb_name]["split"])


def load_ogb(info: DatasetInfo, data_root: Path) -> LinkSplit:
    """Loads ``info``'s dataset from OGB's folder ``data_root/<dir_name>``,
    downloading it there through OGB when absent.

    Reads only the node count, the node features and the split files
    (``torch.load`` with ``weights_only=True``: a file that would run code is
    refused), never ``raw/edge.csv.gz``, and writes nothing. A folder that
    holds another OGB dataset, or a damaged one, gives one :class:`PLNLPError`
    that says how to fix it."""
    folder = data_root / info.dir_name
    if not folder.is_dir():
        _download(info, data_root)
    try:
        clues = _layout_clues(info, folder)
        _refuse_other_dataset(info, folder, clues)
        parts = _read_split_files(folder, split_type(info))
        _refuse_other_dataset(info, folder, [*clues, _key_clue(parts)])
        num_nodes = _read_count(folder, "raw/num-node-list.csv.gz")
        x = _read_features(info, folder, num_nodes)
        return _canonical(info, num_nodes, x, parts)
    except PLNLPError:
        raise
    except _UNREADABLE as error:
        raise PLNLPError(
            f"{info.ogb_name} at {folder} could not be read ({first_line(error)}); "
            "replace it with a fresh copy of OGB's folder, or delete it to download "
            "it again."
        ) from error


def _download(info: DatasetInfo, data_root: Path) -> None:
    try:
        from ogb.linkproppred import LinkPropPredDataset  # its import takes sklearn and PyG

        data_root.mkdir(parents=True, exist_ok=True)
        LinkPropPredDataset(name=info.ogb_name, root=str(data_root))
    except (OSError, urllib.error.URLError, EOFError, SystemExit) as error:
        # OGB asks on stdin before downloading over 1 GB; with no one to answer, it fails.
        reason = "OGB asks before downloading over 1 GB" if isinstance(
            error, EOFError | SystemExit) else str(error)
        shutil.rmtree(data_root / info.dir_name, ignore_errors=True)
        raise PLNLPError(
            f"{info.ogb_name} is not at {data_root / info.dir_name} and could not be "
            f"downloaded ({reason}); copy OGB's {info.dir_name} folder there, or set "
            "--data-root or PLNLP_DATA_ROOT to a folder that holds it."
        ) from error


# Which dataset a folder holds -------------------------------------------------

@dataclass(frozen=True)
class _Clue:
    """What one part of a folder shows (``evidence``) and the OGB datasets
    it is consistent with (``holds``)."""

    evidence: str
    holds: frozenset[str]


def _known() -> list[DatasetInfo]:
    """OGB's datasets in the catalogue (a Planetoid graph has no OGB layout)."""
    infos = (DATASETS.get(name) for name in DATASETS.names)
    return [info for info in infos if info.family == "ogb"]


def _refuse_other_dataset(info: DatasetInfo, folder: Path, clues: Iterable[_Clue | None]) -> None:
    """Raises when the clues agree on datasets that exclude ``info``'s.
    Clues that contradict each other (a damaged folder) refuse nothing: the
    read that follows says what is broken."""
    clues = [clue for clue in clues if clue is not None]
    if not clues:
        return
    holds = frozenset.intersection(*(clue.holds for clue in clues))
    if not holds or info.ogb_name in holds:
        return
    evidence = ", and ".join(c.evidence for c in clues if info.ogb_name not in c.holds)
    raise PLNLPError(
        f"{folder} appears to hold {' or '.join(sorted(holds))}, not {info.ogb_name} "
        f"({evidence}); point --data-root or PLNLP_DATA_ROOT at a folder whose "
        f"{info.dir_name} holds {info.ogb_name}."
    )


def _layout_clues(info: DatasetInfo, folder: Path) -> list[_Clue | None]:
    """The release note, or else the split folders and the feature width."""
    release = _release_clue(folder)
    if release is not None:
        return [release]
    return [_split_folder_clue(info, folder), _feature_clue(folder)]


def _release_clue(folder: Path) -> _Clue | None:
    """The dataset ``RELEASE_v*.txt``'s first line names
    (``# Release note for ogbl-ddi``)."""
    for note in sorted(folder.glob("RELEASE_v*.txt")):
        with note.open(errors="replace") as handle:
            match = re.search(r"ogb[lng][-_][a-z0-9]+", handle.readline().lower())
        if match:
            name = match.group(0).replace("_", "-")
            return _Clue(f"its {note.name} names {name}", frozenset([name]))
    return None


def _split_folder_clue(info: DatasetInfo, folder: Path) -> _Clue | None:
    """The datasets whose split type is one of ``split/``'s folders."""
    split_root = folder / "split"
    if not split_root.is_dir():
        return None
    present = sorted(p.name for p in split_root.iterdir() if p.is_dir())
    if not present:
        return None
    holds = frozenset(d.ogb_name for d in _known() if split_type(d) in present)
    shown = ", ".join(f"split/{name}" for name in present)
    return _Clue(f"it has {shown}, not split/{split_type(info)}", holds)


def _feature_clue(folder: Path) -> _Clue | None:
    """The datasets whose feature width is that of ``raw/node-feat.csv.gz``."""
    width = _feature_width(folder / "raw" / "node-feat.csv.gz")
    if width is None:
        return None
    shown = f"{width} node features" if width else "no raw/node-feat.csv.gz"
    return _Clue(f"it has {shown}",
                 frozenset(d.ogb_name for d in _known() if d.feature_dim == width))


def _feature_width(path: Path) -> int | None:
    """Values on the first line of ``path``: 0 when there is no such file,
    ``None`` when it is empty."""
    if not path.exists():
        return 0
    with _gzip_csv("raw/node-feat.csv.gz"), gzip.open(path, "rt") as handle:
        first = handle.readline().strip()
    return first.count(",") + 1 if first else None


def _train_keys(info: DatasetInfo) -> frozenset[str]:
    """The keys of OGB's training split dict for ``info``: MRR datasets list
    ``source_node``/``target_node`` (their negatives are per source), the
    others ``edge``; ``weight``/``year`` where edges carry them."""
    keys = {"source_node", "target_node"} if info.metric == "mrr" else {"edge"}
    keys |= {"weight"} if info.edge_weights else set()
    keys |= {"year"} if info.edge_years else set()
    return frozenset(keys)


def _key_clue(parts: dict[str, dict]) -> _Clue:
    """The datasets whose training split dict has exactly these keys."""
    keys = frozenset(parts["train"])
    return _Clue(f"its training split has keys {', '.join(sorted(keys))}",
                 frozenset(d.ogb_name for d in _known() if _train_keys(d) == keys))


# Reading the files -------------------------------------------------------------

def _read_split_files(folder: Path, kind: str) -> dict[str, dict]:
    """``{"train": ..., "valid": ..., "test": ...}`` from ``split/<kind>``:
    ``split_dict.pt`` when present (as OGB does), else one file per part."""
    where = f"split/{kind}"
    if not (folder / where).is_dir():
        raise FileNotFoundError(f"{where} is missing")
    if (folder / where / "split_dict.pt").is_file():
        parts = _load_pt(folder, f"{where}/split_dict.pt")
        if not isinstance(parts, dict) or not all(
                isinstance(parts.get(name), dict) for name in SPLIT_PARTS):
            raise ValueError(f"{where}/split_dict.pt does not hold the train, valid and test dicts")
        return parts
    parts = {name: _load_pt(folder, f"{where}/{name}.pt") for name in SPLIT_PARTS}
    for name, part in parts.items():
        if not isinstance(part, dict):
            raise ValueError(f"{where}/{name}.pt does not hold a dict of arrays")
    return parts


def _load_pt(folder: Path, relative: str) -> object:
    """``torch.load`` that unpickles numpy arrays and nothing else."""
    path = folder / relative
    if not path.is_file():
        raise FileNotFoundError(f"{relative} is missing")
    try:
        with torch.serialization.safe_globals(NUMPY_SAFE_GLOBALS):
            return torch.load(path, map_location="cpu", weights_only=True)
    except _BAD_PICKLE as error:
        raise ValueError(
            f"{relative} is truncated, corrupt or holds objects other than numpy arrays"
        ) from error


@contextmanager
def _gzip_csv(relative: str) -> Iterator[None]:
    """Names ``relative`` in any error reading it as a gzip CSV."""
    try:
        yield
    except _BAD_GZIP_CSV as error:
        raise ValueError(
            f"{relative} is not a readable gzip CSV: {first_line(error)}") from error


def _read_count(folder: Path, relative: str) -> int:
    """The single number of a one-line gzip CSV (``num-node-list.csv.gz``)."""
    path = folder / relative
    if not path.is_file():
        raise FileNotFoundError(f"{relative} is missing")
    with _gzip_csv(relative), gzip.open(path, "rt") as handle:
        first = handle.readline().strip()
    if not first.isdigit():
        raise ValueError(f"{relative} does not start with a count")
    return int(first)


def _read_features(info: DatasetInfo, folder: Path, num_nodes: int) -> Tensor | None:
    """``raw/node-feat.csv.gz`` as a float32 ``[num_nodes, feature_dim]``
    tensor, or ``None`` when the dataset has no features. Arrow parses it
    straight to float32 (ogbl-ppa's 0/1 integers too), one block at a time
    into the result, so the whole table is never held twice."""
    relative = "raw/node-feat.csv.gz"
    path = folder / relative
    if info.feature_dim == 0 and not path.exists():
        return None
    if not path.is_file():
        raise FileNotFoundError(f"{relative} is missing")
    x = np.empty((num_nodes, info.feature_dim), dtype=np.float32)
    with _gzip_csv(relative):
        shape = _fill_rows(path, x)
    if shape != x.shape:
        raise ValueError(f"{relative} is {shape[0]} x {shape[1]}, not {num_nodes} nodes x "
                         f"{info.feature_dim} features")
    return torch.from_numpy(x)


def _fill_rows(path: Path, out: np.ndarray) -> tuple[int, int]:
    """Streams the CSV at ``path`` into ``out`` while its shape fits;
    returns the CSV's shape."""
    rows, width = 0, out.shape[1]
    reader = pa_csv.open_csv(
        path, read_options=pa_csv.ReadOptions(autogenerate_column_names=True),
        convert_options=pa_csv.ConvertOptions(
            column_types={f"f{i}": pa.float32() for i in range(width)}),
    )
    for batch in reader:
        end = rows + batch.num_rows
        if batch.num_columns == out.shape[1] and end <= out.shape[0]:
            out[rows:end] = np.stack([column.to_numpy() for column in batch.columns], axis=1)
        rows, width = end, batch.num_columns
    return rows, width


# The canonical form ------------------------------------------------------------

def _canonical(info: DatasetInfo, num_nodes: int, x: Tensor | None,
               parts: dict[str, dict]) -> LinkSplit:
    train, valid, test = (parts[name] for name in SPLIT_PARTS)
    split = LinkSplit(
        info=info,
        num_nodes=num_nodes,
        x=x,
        train_pos=_positives(train, "train"),
        train_weight=_optional(train, "weight", torch.float, "train"),
        train_year=_optional(train, "year", torch.long, "train"),
        valid_pos=_positives(valid, "valid"),
        valid_neg=_negatives(valid, "valid"),
        test_pos=_positives(test, "test"),
        test_neg=_negatives(test, "test"),
        valid_weight=_optional(valid, "weight", torch.float, "valid"),
        valid_year=_optional(valid, "year", torch.long, "valid"),
    )
    for name in ("train_pos", "valid_pos", "valid_neg", "test_pos", "test_neg"):
        _check_nodes(getattr(split, name), num_nodes, name)
    return split


def _array(part: dict, key: str, where: str) -> Tensor:
    """``part[key]`` as a tensor that shares the array's memory."""
    value = part.get(key)
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value if value.flags.writeable else value.copy())
    if isinstance(value, Tensor):
        return value
    raise ValueError(f"the {where} split has no array {key!r}")


def _as_long(part: dict, key: str, where: str) -> Tensor:
    return _array(part, key, where).long()  # int64 keeps the same memory


def _pairs(part: dict, key: str, where: str) -> Tensor:
    pairs = _as_long(part, key, where)
    if pairs.dim() != 2 or pairs.size(1) != 2:
        raise ValueError(f"the {where} split's {key!r} is {tuple(pairs.shape)}, not [M, 2]")
    return pairs


def _positives(part: dict, where: str) -> Tensor:
    if "source_node" not in part:
        return _pairs(part, "edge", where)
    return torch.stack([_as_long(part, "source_node", where),
                        _as_long(part, "target_node", where)], dim=-1)


def _negatives(part: dict, where: str) -> Tensor:
    if "target_node_neg" not in part:
        return _pairs(part, "edge_neg", where)
    targets = _as_long(part, "target_node_neg", where)
    sources = _as_long(part, "source_node", where).repeat_interleave(targets.size(1))
    return torch.stack([sources, targets.reshape(-1)], dim=-1)


def _optional(part: dict, key: str, dtype: torch.dtype, where: str) -> Tensor | None:
    return _array(part, key, where).to(dtype).reshape(-1) if key in part else None


def _check_nodes(pairs: Tensor, num_nodes: int, name: str) -> None:
    if pairs.numel() == 0:
        return
    low, high = torch.aminmax(pairs)
    if int(low) < 0 or int(high) >= num_nodes:
        raise ValueError(f"{name} names nodes outside 0..{num_nodes - 1}")
