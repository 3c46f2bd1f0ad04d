"""Reading and writing a :class:`LinkSplit` as Parquet tables."""
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import Tensor

from components.artifacts import DatasetMeta
from plnlp_core.datasets import DATASETS, LinkSplit

PAIR_TABLES = ("valid_pos", "valid_neg", "test_pos", "test_neg")


def pairs_table(pairs: Tensor, **columns: Tensor | None) -> pa.Table:
    """A table with ``src``, ``dst`` and any further non-``None`` columns."""
    data = {"src": pairs[:, 0].numpy(), "dst": pairs[:, 1].numpy()}
    data.update({name: col.numpy() for name, col in columns.items() if col is not None})
    return pa.table(data)


def table_pairs(table: pa.Table) -> Tensor:
    return torch.stack([column(table, "src"), column(table, "dst")], dim=-1)


def column(table: pa.Table, name: str) -> Tensor:
    return torch.from_numpy(table.column(name).to_numpy().copy())


def write_split(split: LinkSplit, directory: Path) -> DatasetMeta:
    """Writes ``split`` under ``directory``; returns what ``meta.json`` holds."""
    pq.write_table(
        pairs_table(split.train_pos, weight=split.train_weight, year=split.train_year),
        directory / "train.parquet",
    )
    for name in PAIR_TABLES:
        pq.write_table(pairs_table(getattr(split, name)), directory / f"{name}.parquet")
    if split.x is not None:
        features = pa.FixedSizeListArray.from_arrays(
            pa.array(split.x.numpy().reshape(-1)), split.x.size(1))
        pq.write_table(pa.table({"x": features}), directory / "node_features.parquet")
    meta = DatasetMeta(
        dataset=split.info.name, num_nodes=split.num_nodes, directed=split.info.directed,
        feature_dim=0 if split.x is None else split.x.size(1), metric=split.info.metric,
        num_train_edges=split.train_pos.size(0),
    )
    meta.write(directory)
    return meta


def read_split(directory: Path) -> LinkSplit:
    """Reads what :func:`write_split` wrote."""
    meta = DatasetMeta.read(directory)
    train = pq.read_table(directory / "train.parquet")
    names = set(train.column_names)
    x = None
    if meta.feature_dim:
        flat = pq.read_table(directory / "node_features.parquet").column("x").combine_chunks()
        x = torch.from_numpy(np.asarray(flat.flatten())).view(meta.num_nodes, -1)
    pairs = {name: table_pairs(pq.read_table(directory / f"{name}.parquet"))
             for name in PAIR_TABLES}
    return LinkSplit(
        info=DATASETS.get(meta.dataset), num_nodes=meta.num_nodes, x=x,
        train_pos=table_pairs(train),
        train_weight=column(train, "weight") if "weight" in names else None,
        train_year=column(train, "year") if "year" in names else None,
        **pairs,
    )
