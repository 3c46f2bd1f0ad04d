"""OGB link-prediction datasets, loaded through the ``ogb`` package into one
canonical form, :class:`LinkSplit`."""
import os
import pickle
import shutil
import tempfile
import urllib.error
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from numpy import dtypes
from ogb.linkproppred import LinkPropPredDataset
from torch import Tensor

from plnlp_core.errors import PLNLPError
from plnlp_core.registry import Registry

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


@dataclass(frozen=True)
class DatasetInfo:
    """What is known of a dataset before loading it."""

    name: str
    ogb_name: str
    metric: str
    directed: bool
    feature_dim: int
    edge_weights: bool = False
    edge_years: bool = False

    @property
    def dir_name(self) -> str:
        return self.ogb_name.replace("-", "_")

    @property
    def metric_keys(self) -> list[str]:
        """Metric names as logged: ``hits_20``, ``hits_50``, ``hits_100`` or ``mrr``."""
        return ["mrr"] if self.metric == "mrr" else ["hits_20", "hits_50", "hits_100"]

    @property
    def main_metric_key(self) -> str:
        return self.metric.replace("@", "_")


DATASETS: Registry[DatasetInfo] = Registry("dataset")
for _info in (
    DatasetInfo("ddi", "ogbl-ddi", "hits@20", directed=False, feature_dim=0),
    DatasetInfo("collab", "ogbl-collab", "hits@50", directed=False, feature_dim=128,
                edge_weights=True, edge_years=True),
    DatasetInfo("ppa", "ogbl-ppa", "hits@100", directed=False, feature_dim=58),
    DatasetInfo("citation2", "ogbl-citation2", "mrr", directed=True, feature_dim=128),
):
    DATASETS.register(_info.name)(_info)


@dataclass
class LinkSplit:
    """A dataset in canonical form. Pairs are ``[M, 2]`` long tensors; for
    MRR datasets the negatives of positive ``i`` are rows
    ``i * K ... (i + 1) * K - 1`` of the negatives."""

    info: DatasetInfo
    num_nodes: int
    x: Tensor | None
    train_pos: Tensor
    train_weight: Tensor | None
    train_year: Tensor | None
    valid_pos: Tensor
    valid_neg: Tensor
    test_pos: Tensor
    test_neg: Tensor


def resolve_data_root(data_root: str | None) -> Path:
    """``data_root`` if given, else ``$PLNLP_DATA_ROOT``, else ``./data``."""
    return Path(data_root or os.environ.get("PLNLP_DATA_ROOT") or "data")


def cache_dir() -> Path:
    """Where derived files go: ``$PLNLP_CACHE_DIR``, else ``~/.cache/plnlp``."""
    return Path(os.environ.get("PLNLP_CACHE_DIR") or Path.home() / ".cache" / "plnlp")


def load_ogb(info: DatasetInfo, data_root: Path) -> LinkSplit:
    """Loads ``info``'s dataset from ``data_root`` with OGB's own loader,
    downloading it there when absent. ``data_root`` is only read: OGB's
    processed cache goes to a scratch folder that is removed afterwards
    (its pickles cannot be reloaded safely)."""
    folder = data_root / info.dir_name
    if not folder.is_dir():
        _download(info, data_root)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="ogb-") as scratch:
        _link_dataset(folder, Path(scratch) / info.dir_name)
        try:
            with torch.serialization.safe_globals(NUMPY_SAFE_GLOBALS):
                dataset = LinkPropPredDataset(name=info.ogb_name, root=scratch)
                return _canonical(info, dataset[0], dataset.get_edge_split())
        except (OSError, EOFError, RuntimeError, KeyError, ValueError, pickle.UnpicklingError,
                pd.errors.ParserError) as error:
            raise PLNLPError(
                f"{info.ogb_name} at {folder} could not be read ({_first_line(error)}); "
                "replace it with a fresh copy of OGB's folder, or delete it to download "
                "it again."
            ) from error


def _download(info: DatasetInfo, data_root: Path) -> None:
    try:
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


def _link_dataset(folder: Path, overlay: Path) -> None:
    """Makes ``overlay`` a dataset folder whose files link to ``folder``'s,
    with an empty ``processed`` folder of its own."""
    (overlay / "processed").mkdir(parents=True)
    for entry in folder.iterdir():
        if entry.name != "processed":
            (overlay / entry.name).symlink_to(entry.resolve())


def _first_line(error: BaseException) -> str:
    if isinstance(error, pickle.UnpicklingError):
        return "a file is corrupt or holds objects other than numpy arrays"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _canonical(info: DatasetInfo, graph: dict, split: dict) -> LinkSplit:
    node_feat = graph.get("node_feat")
    x = torch.from_numpy(node_feat).float() if node_feat is not None else None
    train = split["train"]
    return LinkSplit(
        info=info,
        num_nodes=int(graph["num_nodes"]),
        x=x,
        train_pos=_positives(train),
        train_weight=_optional(train, "weight", torch.float),
        train_year=_optional(train, "year", torch.long),
        valid_pos=_positives(split["valid"]),
        valid_neg=_negatives(split["valid"]),
        test_pos=_positives(split["test"]),
        test_neg=_negatives(split["test"]),
    )


def _as_long(array: np.ndarray | Tensor) -> Tensor:
    return torch.as_tensor(array).long()


def _positives(part: dict) -> Tensor:
    if "edge" in part:
        return _as_long(part["edge"])
    return torch.stack([_as_long(part["source_node"]), _as_long(part["target_node"])], dim=-1)


def _negatives(part: dict) -> Tensor:
    if "edge_neg" in part:
        return _as_long(part["edge_neg"])
    targets = _as_long(part["target_node_neg"])
    sources = _as_long(part["source_node"]).repeat_interleave(targets.size(1))
    return torch.stack([sources, targets.reshape(-1)], dim=-1)


def _optional(part: dict, key: str, dtype: torch.dtype) -> Tensor | None:
    return torch.as_tensor(part[key]).to(dtype).reshape(-1) if key in part else None
