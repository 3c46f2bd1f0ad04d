"""A graph of one's own, read into the canonical :class:`LinkSplit`.

Two inputs:

* an **edge list**, ``.csv`` or ``.parquet``, with columns ``src``, ``dst``
  and optionally ``weight`` (numbers, at least 0) and ``time`` (numbers, or
  dates and datetimes pandas parses). Self-loops are dropped, and so are
  repeated edges, keeping the first row of each (its weight and time); an
  undirected graph (the default) counts :math:`(u, v)` and :math:`(v, u)` as
  one edge. The edges are split, seeded, at random or by time (the earliest
  train, the latest test); each held-out positive gets one evaluation
  negative drawn uniformly among the pairs that are neither an edge of the
  whole graph nor a self-loop, so every run and every heuristic scores the
  same pairs.
* a **split folder** with one ``train``, ``valid`` and ``test`` file each
  (``.csv`` or ``.parquet``), columns ``src``, ``dst``, ``label`` (1 a
  positive, 0 a negative; train's are all 1 and may be left out) and
  optionally ``weight``: that exact split, the training edges cleaned as
  above.

Node ids, integers or strings, become ``0 .. n - 1`` in their sorted order
over every file, and the mapping comes back as a table (``id``, ``index``).
Node features, optional, are a file with a column ``id`` and one numeric
column a feature, or a sparse form (:mod:`plnlp_core.data.node_features`).
Bad input gives one :class:`PLNLPError` that names the file and the fix. The graph is scored by AUC and Hits@K (see :mod:`plnlp_core.scoring.evaluation`).
"""
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import torch
from torch import Tensor

from plnlp_core.choices import DEFAULT_SPLIT
from plnlp_core.data.datasets import SPLIT_PARTS, DatasetInfo, LinkSplit
from plnlp_core.edge_set import EdgeSet
from plnlp_core.data.node_features import FeatureTable, read_node_features
from plnlp_core.data.tables import READERS, is_numeric, read_table, require_columns
from plnlp_core.errors import PLNLPError, first_line

SPLIT_KINDS = ("random", "time")


@dataclass(frozen=True)
class GraphReport:
    """What reading a graph dropped or noticed.

    Attributes:
        num_nodes (int): Nodes of the graph.
        num_edges (int): Training edges plus valid and test positives.
        self_loops (int): Training rows dropped as self-loops.
        duplicates (int): Training rows dropped as repeats of an earlier edge.
        valid_cold_nodes (int): Distinct nodes of the valid pairs without a
            training edge (kept).
        test_cold_nodes (int): The same for the test pairs.
        extra_feature_ids (int): Feature rows whose id is no node (ignored).
        hits_left_out (list): The Hits@K cut-offs not scored, as K is not
            below the number of negatives valid or test ranks against (with
            fewer, every positive is a hit).
        negatives (int): The fewest negatives valid or test ranks against.
    """

    num_nodes: int
    num_edges: int
    self_loops: int
    duplicates: int
    valid_cold_nodes: int
    test_cold_nodes: int
    extra_feature_ids: int = 0
    hits_left_out: list[int] = dataclasses.field(default_factory=list)
    negatives: int = 0

    def __str__(self) -> str:
        text = (f"{self.num_nodes} nodes, {self.num_edges} edges; dropped {self.self_loops} "
                f"self-loops and {self.duplicates} duplicate edges; {self.valid_cold_nodes} "
                f"valid and {self.test_cold_nodes} test nodes have no training edge; "
                f"{self.extra_feature_ids} feature rows name no node")
        if self.hits_left_out:
            cut_offs = ", ".join(f"Hits@{k}" for k in self.hits_left_out)
            text += (f"; {cut_offs} left out: valid or test ranks each positive against "
                     f"{self.negatives} negatives, and with no more negatives than K every "
                     "positive is a hit (AUC stays)")
        return text


@dataclass
class OwnGraph:
    """A graph read by :func:`load_own_graph`: its split, the node ids
    (a table of ``id``, the user's, and ``index``, the split's), and the
    report."""

    split: LinkSplit
    node_ids: pa.Table
    report: GraphReport


def load_own_graph(
    path: str | Path, split: str = DEFAULT_SPLIT, directed: bool = False, seed: int = 0,
    features: str | Path | None = None, hits_k: Sequence[int] = (20, 50, 100),
) -> OwnGraph:
    """Reads the edge list or split folder at ``path`` (see the module).

    Args:
        path: An edge list file, or a split folder (``split`` is then unused).
        split: ``random:TRAIN,VALID,TEST`` or ``time:TRAIN,VALID,TEST``.
        directed: Whether :math:`(u, v)` and :math:`(v, u)` are different edges.
        seed: Seeds the split and the evaluation negatives.
        features: A node feature file, or ``None``.
        hits_k: The Hits@K cut-offs the graph is scored by, besides AUC;
            those not below the number of negatives are left out (and said
            in the report).
    """
    path = Path(path)
    if not hits_k or not all(isinstance(k, int) and k >= 1 for k in hits_k):
        raise PLNLPError(f"Hits@K cut-offs must be positive integers, got {list(hits_k)}.")
    if path.is_dir():
        ids, parts, report = _read_split_folder(path, directed)
    else:
        ids, parts, report = _read_edge_list(path, parse_split(split), directed, seed)
    x, entries = None, None
    if features is not None:
        table = read_node_features(Path(features), ids)
        x, entries = table.tensor(), len(table.values) if table.kept_sparse else None
        report = dataclasses.replace(report, extra_feature_ids=len(table.extra_ids))
    negatives = min(len(parts["valid_neg"]), len(parts["test_neg"]))
    scored = tuple(k for k in hits_k if k < negatives)
    report = dataclasses.replace(report, negatives=negatives,
                                 hits_left_out=[k for k in hits_k if k not in scored])
    name = path.resolve().name if path.is_dir() else path.stem
    info = DatasetInfo(name, name, "auc", directed, 0 if x is None else x.size(1),
                       edge_weights=parts["train_weight"] is not None, hits_k=scored,
                       feature_entries=entries)
    tensors = {key: None if a is None else torch.from_numpy(a) for key, a in parts.items()}
    link_split = LinkSplit(info=info, num_nodes=len(ids), x=x, train_year=None, **tensors)
    node_ids = pa.table({"id": ids, "index": pa.array(np.arange(len(ids)))})
    return OwnGraph(link_split, node_ids, report)


def describe_own_graph(path: str | Path, directed: bool = False,
                       hits_k: Sequence[int] = (20, 50, 100)) -> DatasetInfo:
    """The :class:`DatasetInfo` :func:`load_own_graph` will give ``path``,
    from the edges' header alone, so settings can be checked against it
    before the edges are read; without node features, which
    :func:`own_node_features` reads and counts."""
    path = Path(path)
    if path.is_dir():
        edges, *_ = (_part_file(path, part) for part in SPLIT_PARTS)
    else:
        edges = path
    columns = _column_types(edges, "edge list")
    missing = [name for name in ("src", "dst") if name not in columns]
    if missing:
        raise PLNLPError(f"{edges} has no column {', '.join(missing)} (its columns: "
                         f"{', '.join(columns)}); name its columns src, dst, in a header line "
                         "for a CSV.")
    name = path.resolve().name if path.is_dir() else path.stem
    return DatasetInfo(name, name, "auc", directed, 0, edge_weights="weight" in columns,
                       hits_k=tuple(hits_k))


def own_node_features(path: str | Path, features: str | Path) -> FeatureTable:
    """The node features file ``features`` read and checked over the node
    ids of the graph at ``path`` (see :mod:`plnlp_core.data.node_features`):
    what a command checks before it starts anything."""
    path = Path(path)
    parts = [_part_file(path, part) for part in SPLIT_PARTS] if path.is_dir() else [path]
    ends = []
    for part in parts:
        table = read_table(part, "edge list")
        require_columns(table, part, ("src", "dst"))
        ends += [table.column("src"), table.column("dst")]
    ids, _ = _index_ids(ends)
    return read_node_features(Path(features), ids)


def count_edges(path: str | Path) -> int:
    """The rows of an edge list (of a split folder's training part), read
    from a Parquet file's footer, or counted as a CSV's lines past its
    header in 16 MiB blocks, without parsing them."""
    path = Path(path)
    edges = _part_file(path, SPLIT_PARTS[0]) if path.is_dir() else path
    if edges.suffix.lower() == ".parquet":
        return pq.ParquetFile(edges).metadata.num_rows
    lines, last = 0, b"\n"
    with edges.open("rb") as file:
        while block := file.read(1 << 24):
            lines, last = lines + block.count(b"\n"), block[-1:]
    return max(lines + (last != b"\n") - 1, 0)


def _column_types(path: Path, role: str) -> dict[str, pa.DataType]:
    """The columns and types of a CSV's first block or a Parquet file's schema."""
    if not path.is_file():
        raise PLNLPError(f"the {role} file {path} does not exist; check the path.")
    try:
        if path.suffix.lower() == ".csv":
            schema = pa_csv.open_csv(path).schema
        elif path.suffix.lower() == ".parquet":
            schema = pq.read_schema(path)
        else:
            raise PLNLPError(f"the {role} file {path} is neither .csv nor .parquet; save it as "
                             "one of them.")
    except (pa.ArrowException, OSError) as error:
        raise PLNLPError(f"the {role} file {path} could not be read as {path.suffix[1:]} "
                         f"({first_line(error)}); fix or export it again.") from error
    return dict(zip(schema.names, schema.types, strict=True))


def parse_split(spec: str) -> tuple[str, tuple[float, float, float]]:
    """The kind (``random`` or ``time``) and the train, valid and test
    fractions of a split spec such as ``random:0.85,0.05,0.10``."""
    kind, _, rest = spec.partition(":")
    try:
        fractions = tuple(float(part) for part in rest.split(","))
    except ValueError:
        fractions = ()
    if kind not in SPLIT_KINDS or len(fractions) != 3:
        raise PLNLPError(f"split {spec!r} does not parse; write random:TRAIN,VALID,TEST or "
                         f"time:TRAIN,VALID,TEST, e.g. {DEFAULT_SPLIT}.")
    if not all(f > 0 for f in fractions) or not abs(sum(fractions) - 1) <= 1e-6:
        raise PLNLPError(f"split {spec!r} needs three positive fractions that sum to 1, "
                         f"e.g. {DEFAULT_SPLIT}.")
    return kind, fractions


# The two inputs ------------------------------------------------------------------

def _read_edge_list(path: Path, spec: tuple[str, tuple[float, ...]], directed: bool,
                    seed: int) -> tuple[pa.Array, dict, GraphReport]:
    kind, fractions = spec
    table = read_table(path, "edge list")
    require_columns(table, path, ("src", "dst"))
    ids, (src, dst) = _index_ids([table.column("src"), table.column("dst")])
    weight = _weights(table, path)
    time = _times(table, path) if kind == "time" else None
    edges = np.stack([src, dst], axis=1)
    keep, loops, duplicates = _clean(edges, len(ids), directed)
    rng = np.random.default_rng(seed)
    order = keep[rng.permutation(len(keep))]  # ties in time fall in random order
    if time is not None:
        order = order[np.argsort(time[order], kind="stable")]
    train, valid, test = np.split(order, np.cumsum(_split_sizes(len(keep), fractions, path))[:2])
    negatives = _negatives(edges[keep], len(ids), directed, len(valid) + len(test), rng, path)
    parts = {
        "train_pos": edges[train], "train_weight": None if weight is None else weight[train],
        "valid_pos": edges[valid], "valid_neg": negatives[:len(valid)],
        "test_pos": edges[test], "test_neg": negatives[len(valid):],
        "valid_weight": None if weight is None else weight[valid],
    }
    return ids, parts, _report(parts, len(ids), loops, duplicates)


def _read_split_folder(folder: Path, directed: bool) -> tuple[pa.Array, dict, GraphReport]:
    paths = {part: _part_file(folder, part) for part in SPLIT_PARTS}
    tables = {part: read_table(path, part) for part, path in paths.items()}
    labels = {}
    for part, table in tables.items():
        optional = part == "train" and "label" not in table.column_names
        require_columns(table, paths[part], ("src", "dst", *(() if optional else ("label",))))
        labels[part] = np.ones(table.num_rows, bool) if optional else _labels(table, paths[part])
    if not labels["train"].all():
        raise PLNLPError(f"{paths['train']} has {int((~labels['train']).sum())} rows labelled 0, "
                         "and train holds positives only; drop them (training samples its own "
                         "negatives).")
    for part in ("valid", "test"):
        if labels[part].all() or not labels[part].any():
            raise PLNLPError(f"{paths[part]} needs at least one positive (label 1) and one "
                             "negative (label 0) pair; add the missing kind.")
    ids, ends = _index_ids([tables[part].column(end) for part in SPLIT_PARTS
                            for end in ("src", "dst")])
    pairs = {part: np.stack(ends[2 * i:2 * i + 2], axis=1) for i, part in enumerate(SPLIT_PARTS)}
    keep, loops, duplicates = _clean(pairs["train"], len(ids), directed)
    if len(keep) == 0:
        raise PLNLPError(f"{paths['train']} holds only self-loops; give it at least one edge "
                         "between two different nodes.")
    weight = _weights(tables["train"], paths["train"])
    positive = labels["valid"]
    parts = {
        "train_pos": pairs["train"][keep], "train_weight": None if weight is None else weight[keep],
        "valid_pos": pairs["valid"][positive], "valid_neg": pairs["valid"][~positive],
        "test_pos": pairs["test"][labels["test"]], "test_neg": pairs["test"][~labels["test"]],
        "valid_weight": _weights(tables["valid"].filter(pa.array(positive)), paths["valid"]),
    }
    return ids, parts, _report(parts, len(ids), loops, duplicates)


# Reading files ------------------------------------------------------------------

def _part_file(folder: Path, part: str) -> Path:
    """The one ``train``, ``valid`` or ``test`` file of a split folder."""
    found = [folder / f"{part}{suffix}" for suffix in READERS
             if (folder / f"{part}{suffix}").is_file()]
    if len(found) != 1:
        raise PLNLPError(f"the split folder {folder} has {len(found)} {part} files; give it "
                         f"exactly one, {part}.csv or {part}.parquet.")
    return found[0]


def _index_ids(columns: list[pa.ChunkedArray]) -> tuple[pa.Array, list[np.ndarray]]:
    """The distinct ids of ``columns``, sorted (integers when every column
    holds integers, else strings), and each column's positions among them."""
    kind = pa.int64() if all(pa.types.is_integer(c.type) for c in columns) else pa.string()
    columns = [column.cast(kind) for column in columns]
    ids = pc.unique(pa.chunked_array([chunk for c in columns for chunk in c.chunks], kind))
    ids = ids.take(pc.sort_indices(ids))
    return ids, [pc.index_in(c, value_set=ids).to_numpy().astype(np.int64) for c in columns]


def _weights(table: pa.Table, path: Path) -> np.ndarray | None:
    if "weight" not in table.column_names:
        return None
    column = table.column("weight")
    if not is_numeric(column.type) or column.null_count or not (column.to_numpy() >= 0).all():
        raise PLNLPError(f"the weight column of {path} holds values that are not numbers of at "
                         "least 0; fix them, or drop the column to weigh every edge 1.")
    return column.to_numpy().astype(np.float32)


def _times(table: pa.Table, path: Path) -> np.ndarray:
    """The ``time`` column as numbers that sort like the times."""
    if "time" not in table.column_names:
        raise PLNLPError(f"a time split needs a time column, and {path} has none; add one, or "
                         f"split at random ({DEFAULT_SPLIT}).")
    column = table.column("time")
    try:
        times = (column.to_numpy().astype(np.float64) if is_numeric(column.type) else
                 pd.to_datetime(column.to_pandas(), utc=True, format="mixed").astype("int64")
                 .to_numpy())
    except (ValueError, TypeError, OverflowError):
        times = None  # pandas could not parse a value, or NaT has no integer
    if times is None or np.isnan(times).any():
        raise PLNLPError(f"the time column of {path} holds values that are neither numbers nor "
                         "dates; give every edge a number or a date such as 2024-01-31.")
    return times


def _labels(table: pa.Table, path: Path) -> np.ndarray:
    """``label == 1`` as a bool mask."""
    labels = table.column("label").to_numpy()
    if not np.isin(labels, [0, 1]).all():
        raise PLNLPError(f"the label column of {path} holds values other than 0 and 1; mark "
                         "positive pairs 1 and negative pairs 0.")
    return labels == 1


# Cleaning, splitting, negatives ---------------------------------------------------

def _clean(edges: np.ndarray, num_nodes: int, directed: bool) -> tuple[np.ndarray, int, int]:
    """The rows of ``edges`` to keep, in file order: no self-loops, and of
    repeated edges the first; and how many of each were dropped."""
    loops = edges[:, 0] == edges[:, 1]
    rows = np.flatnonzero(~loops)
    pairs = edges[rows] if directed else np.sort(edges[rows], axis=1)
    _, first = np.unique(pairs[:, 0] * num_nodes + pairs[:, 1], return_index=True)
    keep = rows[np.sort(first)]
    return keep, int(loops.sum()), len(rows) - len(keep)


def _split_sizes(num_edges: int, fractions: tuple[float, ...], path: Path) -> list[int]:
    """Edges in train, valid and test: valid's and test's fractions rounded
    half up, train the rest."""
    held = [int(np.floor(f * num_edges + 0.5)) for f in fractions[1:]]
    sizes = [num_edges - sum(held), *held]
    if min(sizes) < 1:
        raise PLNLPError(f"{path} has {num_edges} edge(s) once self-loops and duplicates are "
                         f"dropped, too few to put one in each of train, valid and test at "
                         f"fractions {', '.join(map(str, fractions))}; add edges, or raise the "
                         "valid and test fractions.")
    return sizes


def _negatives(edges: np.ndarray, num_nodes: int, directed: bool, count: int,
               rng: np.random.Generator, path: Path) -> np.ndarray:
    """``count`` pairs drawn uniformly among those that are no edge of
    ``edges`` (either direction when undirected) and no self-loop."""
    known = EdgeSet(torch.from_numpy(edges), num_nodes, undirected=not directed)
    if len(known) == num_nodes * (num_nodes - 1):
        raise PLNLPError(f"{path} links every pair of its {num_nodes} nodes, which leaves no "
                         "non-edge to evaluate against; give a graph with missing pairs.")
    found = np.empty((0, 2), dtype=np.int64)
    while len(found) < count:
        pairs = rng.integers(num_nodes, size=(2 * (count - len(found)), 2))
        fresh = (pairs[:, 0] != pairs[:, 1]) & ~known.contains(torch.from_numpy(pairs)).numpy()
        found = np.concatenate([found, pairs[fresh]])
    return found[:count]


def _report(parts: dict, num_nodes: int, loops: int, duplicates: int) -> GraphReport:
    trained = np.zeros(num_nodes, dtype=bool)
    trained[parts["train_pos"].reshape(-1)] = True

    def cold(name: str) -> int:
        nodes = np.unique(np.concatenate([parts[f"{name}_pos"], parts[f"{name}_neg"]]))
        return int((~trained[nodes]).sum())

    num_edges = sum(len(parts[name]) for name in ("train_pos", "valid_pos", "test_pos"))
    return GraphReport(num_nodes, num_edges, loops, duplicates, cold("valid"), cold("test"))
