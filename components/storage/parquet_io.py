"""Reading and writing a :class:`LinkSplit` as Parquet tables, its
training graph and node features as memory-mapped ``.npy`` files beside
them (see :mod:`components.storage.graph_files`)."""
import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import Tensor

from components.storage.graph_files import read_features, write_graph_files
from components.storage.split_meta import DatasetMeta
from plnlp_core.data.datasets import DATASETS, LinkSplit
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.nn.node_input import summarize_categories

PAIR_TABLES = ("valid_pos", "valid_neg", "test_pos", "test_neg")
NODE_IDS_FILE = "node_ids.parquet"
"""A graph of one's own keeps its node ids beside its split (column ``id``)."""


def pairs_table(pairs: Tensor, **columns: Tensor | None) -> pa.Table:
    """A table with ``src``, ``dst`` and any further non-``None`` columns."""
    data = {"src": pairs[:, 0].numpy(), "dst": pairs[:, 1].numpy()}
    data.update({name: col.numpy() for name, col in columns.items() if col is not None})
    return pa.table(data)


def table_pairs(table: pa.Table) -> Tensor:
    """``src`` and ``dst`` as one ``[M, 2]`` tensor (one copy, the stack)."""
    return torch.from_numpy(
        np.stack([table.column("src").to_numpy(), table.column("dst").to_numpy()], axis=-1))


def column(table: pa.Table, name: str) -> Tensor:
    """Column ``name`` as a tensor."""
    return writable_tensor(table.column(name).to_numpy())


def writable_tensor(array: np.ndarray) -> Tensor:
    """``array`` as a tensor, copied only when it is Arrow's read-only memory."""
    return torch.from_numpy(array if array.flags.writeable else array.copy())


def optional_column(table: pa.Table, name: str) -> Tensor | None:
    return column(table, name) if name in table.column_names else None


def fixed_size_rows(matrix: Tensor) -> pa.FixedSizeListArray:
    """The rows of ``matrix`` (``[M, K]``) as one Arrow list of ``K`` values each."""
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.numpy().reshape(-1)), matrix.size(1))


def rows_tensor(rows: pa.ChunkedArray) -> Tensor:
    """What :func:`fixed_size_rows` wrote, as an ``[M, K]`` tensor."""
    rows = rows.combine_chunks()
    return writable_tensor(np.asarray(rows.flatten())).view(len(rows), rows.type.list_size)


def write_split(split: LinkSplit, directory: Path) -> DatasetMeta:
    """Writes ``split`` under ``directory``; returns what ``meta.json`` holds."""
    pq.write_table(
        pairs_table(split.train_pos, weight=split.train_weight, year=split.train_year),
        directory / "train.parquet",
    )
    pq.write_table(
        pairs_table(split.valid_pos, weight=split.valid_weight, year=split.valid_year),
        directory / "valid_pos.parquet",
    )
    for name in PAIR_TABLES[1:]:
        pq.write_table(pairs_table(getattr(split, name)), directory / f"{name}.parquet")
    write_graph_files(split, directory)
    meta = DatasetMeta(
        dataset=split.info.name, num_nodes=split.num_nodes, directed=split.info.directed,
        feature_dim=0 if split.x is None else split.x.size(1), metric=split.info.metric,
        num_train_edges=split.train_pos.size(0),
        info=None if split.info.name in DATASETS else dataclasses.asdict(split.info),
        categories=None if split.x is None else summarize_categories(split.x),
    )
    meta.write(directory)
    return meta


def read_split(directory: Path) -> LinkSplit:
    """Reads what :func:`write_split` wrote, the node features memory-mapped."""
    meta = DatasetMeta.read(directory)
    train = pq.read_table(directory / "train.parquet")
    x = read_features(directory, meta.num_nodes, meta.feature_dim) if meta.feature_dim else None
    valid = pq.read_table(directory / "valid_pos.parquet")
    return LinkSplit(
        info=meta.dataset_info(), num_nodes=meta.num_nodes, x=x,
        train_pos=table_pairs(train),
        train_weight=optional_column(train, "weight"),
        train_year=optional_column(train, "year"),
        valid_pos=table_pairs(valid),
        **{name: table_pairs(pq.read_table(directory / f"{name}.parquet"))
           for name in PAIR_TABLES[1:]},
        valid_weight=optional_column(valid, "weight"),
        valid_year=optional_column(valid, "year"),
    )


def read_node_ids(directory: Path, num_nodes: int) -> NodeIds:
    """The user's node ids of the split in ``directory`` (its
    :data:`NODE_IDS_FILE`, for a graph of one's own); positions for OGB's."""
    path = directory / NODE_IDS_FILE
    ids = pq.read_table(path).column("id").combine_chunks() if path.exists() else None
    return NodeIds(num_nodes, ids)
