"""Node features of a graph of one's own, in the three forms users keep them:

* **wide**: a column ``id`` and one numeric column a feature, a row a node
  (every node of the graph needs one);
* **long**: columns ``id``, ``feature`` and optionally ``value`` (1 where
  left out), a row per non-zero entry; ``feature`` holds integer indices
  from 0, or names (numbered in their sorted order);
* **lists**: columns ``id`` and ``features``, each node's active feature
  indices, a Parquet list of integers or, in a CSV, integers separated by
  spaces, commas or semicolons (``3 17 42``, ``[3, 17, 42]``).

In the two sparse forms a node without rows has no active feature, and
nothing of the size nodes x features is written; every form is read into
its non-zero entries (:class:`FeatureTable`), checked there, and only the
model's input tensor is made from them (:meth:`FeatureTable.tensor`: sparse
where few entries are set, so that no nodes x features table is made at all).
Rows naming no node of the graph are left out and counted, so that a
feature file covering more nodes than the edge list (nodes without edges)
still serves. Each refusal is one :class:`PLNLPError` naming the file, the
node or column, and the fix."""
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from torch import Tensor

from plnlp_core.data.tables import is_numeric, read_table, require_columns
from plnlp_core.errors import PLNLPError

LONG_COLUMNS = ({"id", "feature"}, {"id", "feature", "value"})
LIST_COLUMNS = {"id", "features"}
LIST_SEPARATORS = r"[\s,;]+"
SPARSE_DENSITY = 0.1
"""The largest fraction of set entries a feature table is kept sparse at."""


@dataclass(frozen=True)
class FeatureTable:
    """A feature file's non-zero entries over the graph's nodes.

    Attributes:
        rows (np.ndarray): Each entry's node, its position among the graph's ids.
        columns (np.ndarray): Each entry's feature index.
        values (np.ndarray): Each entry's value, float32.
        num_features (int): The number of feature columns.
        num_nodes (int): The graph's nodes.
        extra_ids (np.ndarray): The file's ids that name no node of the graph.
    """

    rows: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    num_features: int
    num_nodes: int
    extra_ids: np.ndarray

    def tensor(self) -> Tensor:
        """The features as the model reads them, ``[num_nodes, num_features]``
        float32: a sparse COO tensor (coalesced) when at most
        :data:`SPARSE_DENSITY` of its entries are set and it has more than one
        column, else dense. A set entry costs 20 bytes sparse (two int64
        indices and a value) against 4 bytes for every entry dense, so a bag
        of words (Cora 1.3 % set) is 15 times smaller sparse, and a table of
        a million nodes by 100,000 words no longer needs 400 GB."""
        return self.sparse() if self.kept_sparse else self.dense()

    @property
    def kept_sparse(self) -> bool:
        """Whether :meth:`tensor` keeps the features sparse."""
        return self.num_features > 1 and \
            len(self.values) <= SPARSE_DENSITY * self.num_nodes * self.num_features

    def sparse(self) -> Tensor:
        """The features as a coalesced sparse COO tensor."""
        indices = torch.from_numpy(np.stack([self.rows, self.columns]))
        return torch.sparse_coo_tensor(indices, torch.from_numpy(self.values),
                                       (self.num_nodes, self.num_features),
                                       check_invariants=True).coalesce()

    def dense(self) -> Tensor:
        """The features as a dense tensor."""
        x = torch.zeros(self.num_nodes, self.num_features)
        x[torch.from_numpy(self.rows), torch.from_numpy(self.columns)] = \
            torch.from_numpy(self.values)
        return x


def read_node_features(path: Path, ids: pa.Array) -> FeatureTable:
    """The node features at ``path`` over the graph's node ``ids`` (sorted,
    integers or strings), in whichever form the file's columns name."""
    table = read_table(path, "node feature")
    require_columns(table, path, ("id",))
    names = set(table.column_names)
    if names in LONG_COLUMNS:
        return _long(table, path, ids)
    if names == LIST_COLUMNS:
        return _lists(table, path, ids)
    return _wide(table, path, ids)


def _positions(table: pa.Table, ids: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Each row's node position among ``ids`` (-1 for none), and the file's
    ids that name no node."""
    file_ids = table.column("id")
    if file_ids.type != ids.type:
        file_ids, ids = file_ids.cast(pa.string()), ids.cast(pa.string())
    position = pc.fill_null(pc.index_in(file_ids, value_set=ids), -1).to_numpy()
    extra = pc.unique(pc.filter(file_ids, pa.array(position < 0))).to_numpy(zero_copy_only=False)
    return position.astype(np.int64), extra


def _one_row_a_node(position: np.ndarray, path: Path, ids: pa.Array) -> None:
    known = np.sort(position[position >= 0])
    repeated = known[1:][known[1:] == known[:-1]]
    if len(repeated):
        raise PLNLPError(f"the node feature file {path} has several rows for node "
                         f"{ids[int(repeated[0])]}; keep one row per id.")


def _wide(table: pa.Table, path: Path, ids: pa.Array) -> FeatureTable:
    values = table.drop_columns(["id"])
    if values.num_columns == 0:
        raise PLNLPError(f"the node feature file {path} has no column besides id; add one "
                         "numeric column a feature, or give the features as columns id, "
                         "feature[, value] or id, features (docs/own-graphs.md).")
    bad = [name for name, column in zip(values.column_names, values.columns, strict=True)
           if not is_numeric(column.type) or column.null_count]
    if bad:
        raise PLNLPError(f"the node feature file {path} has columns that are not all numbers "
                         f"({', '.join(bad)}); fix them, fill their empty cells, or drop them.")
    position, extra = _positions(table, ids)
    _one_row_a_node(position, path, ids)
    covered = np.zeros(len(ids), dtype=bool)
    covered[position[position >= 0]] = True
    if not covered.all():
        raise PLNLPError(f"the node feature file {path} has no row for {int((~covered).sum())} of "
                         f"the graph's {len(ids)} node ids (e.g. {ids[int(np.argmin(covered))]}); "
                         "add a row for every node id.")
    known = position >= 0
    matrix = np.column_stack([column.to_numpy() for column in values.columns])[known]
    matrix = matrix.astype(np.float32)
    _refuse_non_finite(matrix, position[known], values.column_names, path, ids)
    rows, columns = np.nonzero(matrix)
    return FeatureTable(position[known][rows], columns.astype(np.int64), matrix[rows, columns],
                        values.num_columns, len(ids), extra)


def _long(table: pa.Table, path: Path, ids: pa.Array) -> FeatureTable:
    require_columns(table, path, ("feature",))
    feature = table.column("feature")
    if pa.types.is_integer(feature.type):
        columns = feature.to_numpy().astype(np.int64)
        names = None
    elif pa.types.is_string(feature.type) or pa.types.is_large_string(feature.type):
        names = pc.unique(feature).sort()
        columns = pc.index_in(feature, value_set=names).to_numpy().astype(np.int64)
    else:
        raise PLNLPError(f"the feature column of {path} holds {feature.type} values, neither "
                         "integer indices nor names; write each feature as an integer index "
                         "from 0 or as a name.")
    values = _value_column(table, path)
    position, extra = _positions(table, ids)
    known = position >= 0
    rows, columns, values = position[known], columns[known], values[known]
    _refuse_negative(columns, rows, path, ids)
    num_features = len(names) if names is not None else int(columns.max(initial=-1)) + 1
    _refuse_non_finite(values[:, None], rows, ["value"], path, ids)
    keys = np.sort(rows * max(num_features, 1) + columns)
    repeated = keys[1:][keys[1:] == keys[:-1]]
    if len(repeated):
        node, column = divmod(int(repeated[0]), max(num_features, 1))
        shown = column if names is None else names[column]
        raise PLNLPError(f"the node feature file {path} has several rows for node {ids[node]} "
                         f"and feature {shown}; keep one row per node and feature.")
    nonzero = values != 0  # a row of value 0 names a feature, as the wide form's zeros do
    return FeatureTable(rows[nonzero], columns[nonzero], values[nonzero], num_features, len(ids),
                        extra)


def _value_column(table: pa.Table, path: Path) -> np.ndarray:
    if "value" not in table.column_names:
        return np.ones(table.num_rows, dtype=np.float32)
    column = table.column("value")
    if not is_numeric(column.type) or column.null_count:
        raise PLNLPError(f"the node feature file {path} has columns that are not all numbers "
                         "(value); fix them, fill their empty cells, or drop them.")
    return column.to_numpy().astype(np.float32)


def _lists(table: pa.Table, path: Path, ids: pa.Array) -> FeatureTable:
    position, extra = _positions(table, ids)
    _one_row_a_node(position, path, ids)
    lists = _integer_lists(table.column("features").combine_chunks(), path, table.column("id"))
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    columns = pc.list_flatten(lists).to_numpy().astype(np.int64)
    rows = np.repeat(position, lengths)
    known = rows >= 0
    rows, columns = rows[known], columns[known]
    _refuse_negative(columns, rows, path, ids)
    rows, columns = np.unique(np.stack([rows, columns]), axis=1)  # a feature listed twice is set
    return FeatureTable(rows, columns, np.ones(len(rows), dtype=np.float32),
                        int(columns.max(initial=-1)) + 1, len(ids), extra)


def _integer_lists(column: pa.Array, path: Path, file_ids: pa.ChunkedArray) -> pa.Array:
    """``features`` as a list array of int64: a Parquet list as it is, a
    single integer as a list of one, a CSV's text split at its separators."""
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        if is_numeric(column.type.value_type) and pa.types.is_integer(column.type.value_type):
            return column.cast(pa.list_(pa.int64()))
    elif pa.types.is_integer(column.type):
        return pa.ListArray.from_arrays(np.arange(len(column) + 1), column.cast(pa.int64()))
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        text = pc.utf8_trim(pc.fill_null(column, ""), "[] \t,;")
        text = pc.if_else(pc.equal(text, ""), pa.scalar(None, text.type), text)  # none active
        parts = pc.split_pattern_regex(text, LIST_SEPARATORS)
        flat = pc.list_flatten(parts)
        ok = pc.match_substring_regex(flat, r"^[+-]?\d+$")
        if pc.all(ok).as_py() is not False:
            return pa.ListArray.from_arrays(parts.offsets, flat.cast(pa.int64()))
        lengths = pc.list_value_length(parts).to_numpy()
        row = int(np.repeat(np.arange(len(parts)), lengths)[np.argmin(ok.to_numpy(
            zero_copy_only=False))])
        raise PLNLPError(f"the features column of {path} holds {column[row].as_py()!r} for node "
                         f"{file_ids[row]}, which is not a list of integer feature indices; "
                         "write the indices separated by spaces (e.g. 3 17 42).")
    raise PLNLPError(f"the features column of {path} holds {column.type} values, not lists of "
                     "integer feature indices; write the indices separated by spaces "
                     "(e.g. 3 17 42).")


def _refuse_negative(columns: np.ndarray, rows: np.ndarray, path: Path, ids: pa.Array) -> None:
    if len(columns) and columns.min() < 0:
        first = int(np.argmin(columns))
        raise PLNLPError(f"the node feature file {path} has the negative feature index "
                         f"{columns[first]} (node {ids[int(rows[first])]}); number features "
                         "from 0.")


def _refuse_non_finite(matrix: np.ndarray, rows: np.ndarray, names: list[str], path: Path,
                       ids: pa.Array) -> None:
    """Refuses features holding NaN or infinity (or a number past float32's
    range), which would make every score NaN, naming the first such cell."""
    finite = np.isfinite(matrix)
    if finite.all():
        return
    row, column = np.argwhere(~finite)[0]
    raise PLNLPError(f"the node feature file {path} holds {int((~finite).sum())} values that are "
                     f"NaN or infinite (or past float32's range), e.g. column {names[column]} of "
                     f"node {ids[int(rows[row])]}; replace them with numbers (0, a column's "
                     "mean).")
