r"""Synthetic stand-ins of the OGB link datasets, written in OGB's exact
on-disk layout at any size up to the published one, so that the whole
pipeline runs on a graph of a real dataset's shape without downloading it::

    root = cached_standin("ppa", "real")      # a data root holding ogbl_ppa/
    split = load_ogb(DATASETS.get("ppa"), root)

The graphs are Chung–Lu graphs: both endpoints of an edge are drawn in
proportion to power-law node weights (exponent :obj:`DEGREE_EXPONENT`),
capped so that no pair is expected more than once, and duplicates and
self-loops are dropped. Degrees are therefore heavy-tailed, as on the real
graphs. Validation and test positives are disjoint from the training edges,
and every negative is a non-edge of the whole graph.
"""
import gzip
import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import torch

from plnlp_core.datasets import DATASETS, DatasetInfo, cache_dir
from plnlp_core.errors import PLNLPError

DEGREE_EXPONENT = 2.3
FORMAT_VERSION = 1
SPLIT_TYPES = {"ddi": "target", "collab": "time", "ppa": "throughput", "citation2": "time"}

_MAX_ROUNDS = 64
_CHUNK = 1 << 22  # entries handled at once where a whole array is not needed
_PARTIAL = ".partial-"
_PICKLE_COPIES = 4.5


@dataclass(frozen=True)
class StandinSize:
    """How big a stand-in is.

    Args:
        num_nodes (int): Nodes.
        train (int): Training edges (each undirected edge counted once).
        valid (int): Validation positives; for citation2, source nodes with
            one positive target each.
        test (int): Test positives, counted as :obj:`valid`.
        valid_neg (int): Validation negatives; for citation2, negative
            targets per source.
        test_neg (int): Test negatives, counted as :obj:`valid_neg`.
        feature_dim (int): Node feature columns (0: no ``node-feat`` file);
            loaders expect the dataset's own width, that of :obj:`SIZES`.
    """

    num_nodes: int
    train: int
    valid: int
    test: int
    valid_neg: int
    test_neg: int
    feature_dim: int = 0

    @property
    def positives(self) -> int:
        """Training, validation and test positives together."""
        return self.train + self.valid + self.test


SIZES: dict[str, dict[str, StandinSize]] = {
    "ddi": {"tiny": StandinSize(60, 320, 40, 40, 40, 40),
            "real": StandinSize(4_267, 1_067_911, 133_489, 133_489, 101_882, 95_599)},
    "collab": {"tiny": StandinSize(50, 240, 30, 30, 30, 30, 128),
               "real": StandinSize(235_868, 1_179_052, 60_084, 46_329, 100_000, 100_000, 128)},
    "ppa": {"tiny": StandinSize(100, 800, 100, 100, 100, 100, 58),
            "real": StandinSize(576_289, 21_231_931, 6_062_562, 3_031_780, 3_000_000,
                                3_000_000, 58)},
    "citation2": {"tiny": StandinSize(50, 240, 30, 30, 1000, 1000, 128),
                  "real": StandinSize(2_927_963, 30_387_995, 86_596, 86_596, 1000, 1000, 128)},
}


def standin_size(dataset: str, size: str = "tiny", scale: float = 1.0) -> StandinSize:
    """The named size of ``dataset`` (``"tiny"`` or ``"real"``), with nodes,
    positives and negative pairs multiplied by ``scale`` (negatives per
    source and the feature dimension stay), each at least 1.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        size (str): A name in :obj:`SIZES`.
        scale (float): A factor, e.g. ``0.01`` for a 1/100 graph.
    """
    sizes = SIZES[_info(dataset).name]
    if size not in sizes:
        raise PLNLPError(f"unknown stand-in size {size!r}; choose one of: {', '.join(sizes)}.")
    if not scale > 0:
        raise PLNLPError(f"the stand-in scale must be a positive number, not {scale}.")
    base = sizes[size]
    negatives = (base.valid_neg, base.test_neg)
    if not _info(dataset).directed:  # citation2's negatives are per source
        negatives = (_scaled(base.valid_neg, scale), _scaled(base.test_neg, scale))
    return replace(base, num_nodes=max(2, _scaled(base.num_nodes, scale)),
                   train=_scaled(base.train, scale), valid=_scaled(base.valid, scale),
                   test=_scaled(base.test, scale), valid_neg=negatives[0], test_neg=negatives[1])


def estimate_standin_bytes(dataset: str, size: StandinSize) -> int:
    """The memory generating ``size`` takes at its peak beyond the
    interpreter's own, in bytes: the larger of drawing the edges (the draws,
    their keys and sorted copies) and saving the largest split while every
    split is held (pickle protocol 2, which legacy ``torch.save`` uses, holds
    about four copies of the arrays it writes), plus one chunk of features.
    It lies 5-15% above the peaks measured on the real ppa and citation2,
    and further above on small sizes."""
    info = _info(dataset)
    edges = 8 * size.positives
    drawing = 7 * edges
    if info.directed:
        negatives = 8 * max(size.valid, size.test) * (max(size.valid_neg, size.test_neg) + 2)
        largest, held = max(16 * size.train, negatives), 3 * edges + negatives
    else:
        per_edge = 16 + 8 * (info.edge_weights + info.edge_years)
        largest = max(per_edge * size.train, per_edge * size.valid + 16 * size.valid_neg,
                      per_edge * size.test + 16 * size.test_neg)
        held = per_edge * size.positives + 16 * (size.valid_neg + size.test_neg)
    saving = held + _PICKLE_COPIES * largest
    features = 32 * _CHUNK if size.feature_dim else 0  # one chunk of rows as numbers and text
    return int(max(drawing, saving)) + features + (64 << 20)


def available_memory_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or ``None`` where it
    cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def write_standin(dataset: str, root: Path, size: StandinSize | str = "tiny",
                  seed: int = 0) -> Path:
    """Writes a stand-in of ``dataset`` to ``root / "ogbl_<name>"`` exactly as
    OGB ships it: ``RELEASE_v1.txt``, ``raw/*.csv.gz``, an empty
    ``processed/`` and ``split/<type>/{train,valid,test}.pt`` (legacy torch
    pickles of int64 numpy arrays). The folder is built beside its place and
    renamed into it when complete. Refuses, before any work, a size whose
    memory estimate exceeds the available memory.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        root (Path): The data root; created if absent.
        size (StandinSize or str): A size, or a name in :obj:`SIZES`.
        seed (int): Seed of the generator; equal seeds give equal files.

    Returns:
        ``root``, a valid ``--data-root`` for ``dataset``.
    """
    info = _info(dataset)
    size = standin_size(dataset, size) if isinstance(size, str) else size
    check_standin_size(dataset, size)
    target = Path(root) / info.dir_name
    if target.exists():
        raise PLNLPError(f"{target} already exists; remove it or choose another folder.")
    scratch = target.with_name(f".{info.dir_name}{_PARTIAL}{_owner()}")
    try:
        _skeleton(scratch, info, SPLIT_TYPES[info.name])
        _WRITERS[info.name](scratch, size, np.random.default_rng(seed))
        scratch.rename(target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Path(root)


def check_standin_size(dataset: str, size: StandinSize) -> None:
    """Raises :class:`PLNLPError` if ``size`` cannot be generated: counts
    below one, more edges than half the node pairs, or a memory estimate
    above the available memory."""
    info = _info(dataset)
    counts = (size.train, size.valid, size.test, size.valid_neg, size.test_neg)
    if size.num_nodes < 2 or min(counts) < 1 or size.feature_dim < 0:
        raise PLNLPError(f"{_describe(info, size)} needs at least 2 nodes and one edge, "
                         "positive and negative in every split.")
    if size.num_nodes > 3_000_000_000:
        raise PLNLPError(f"{_describe(info, size)} has too many nodes; use at most "
                         "3,000,000,000.")
    pairs = size.num_nodes * (size.num_nodes - 1) // (1 if info.directed else 2)
    if size.positives > pairs // 2:
        raise PLNLPError(f"{_describe(info, size)} would need {size.positives:,} of its "
                         f"{pairs:,} node pairs as edges; use at most half, with more nodes "
                         "or fewer edges.")
    needed, available = estimate_standin_bytes(dataset, size), available_memory_bytes()
    if available is not None and needed > available:
        raise PLNLPError(f"{_describe(info, size)} needs about {needed / 2**30:.1f} GiB of "
                         f"memory to generate but only {available / 2**30:.1f} GiB is "
                         "available; choose a smaller size or scale.")


def cached_standin(dataset: str, size: StandinSize | str = "tiny", seed: int = 0) -> Path:
    """A data root holding a stand-in of ``dataset``, under
    ``cache_dir() / "standins" / <key>`` (the key names the dataset, the
    size's numbers, the seed and :obj:`FORMAT_VERSION`). It is generated in a
    scratch folder beside it and renamed into place when complete; a later
    call reuses it. Of two processes generating it at once, the one that
    renames second discards its scratch folder.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        size (StandinSize or str): A size, or a name in :obj:`SIZES`.
        seed (int): Seed of the generator.
    """
    info = _info(dataset)
    size = standin_size(dataset, size) if isinstance(size, str) else size
    final = cache_dir() / "standins" / _cache_key(info, size, seed)
    if final.is_dir():
        print(f"reusing the {info.ogb_name} stand-in at {final}")
        return final
    check_standin_size(dataset, size)
    _remove_stale_scratch(final)
    scratch = final.with_name(f"{final.name}{_PARTIAL}{_owner()}")
    print(f"generating {_describe(info, size)} at {final}")
    started = time.perf_counter()
    try:
        write_standin(dataset, scratch, size, seed)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        scratch.rename(final)
    except OSError:  # another process renamed its copy into place first
        shutil.rmtree(scratch, ignore_errors=True)
        if not final.is_dir():
            raise
        print(f"reusing the {info.ogb_name} stand-in another process wrote at {final}")
        return final
    print(f"generated it in {time.perf_counter() - started:.1f} s")
    return final


def _info(dataset: str) -> DatasetInfo:
    info = DATASETS.get(dataset)
    if info.name not in SPLIT_TYPES:
        raise PLNLPError(f"there is no stand-in for {dataset!r}; choose one of: "
                         f"{', '.join(SPLIT_TYPES)}.")
    return info


def _scaled(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def _describe(info: DatasetInfo, size: StandinSize) -> str:
    return (f"the {info.ogb_name} stand-in of {size.num_nodes:,} nodes and {size.train:,} "
            "training edges")


def _cache_key(info: DatasetInfo, size: StandinSize, seed: int) -> str:
    numbers = (size.num_nodes, size.train, size.valid, size.test, size.valid_neg, size.test_neg,
               size.feature_dim)
    return f"{info.name}-{'-'.join(map(str, numbers))}-seed{seed}-v{FORMAT_VERSION}"


def _owner() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _remove_stale_scratch(final: Path) -> None:
    """Removes scratch folders of ``final`` left by dead processes of this host."""
    prefix = f"{final.name}{_PARTIAL}{socket.gethostname()}-"
    for scratch in final.parent.glob(f"{final.name}{_PARTIAL}*"):
        pid = scratch.name[len(prefix):].split("-")[0]
        if scratch.name.startswith(prefix) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(scratch, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    return True


def _skeleton(folder: Path, info: DatasetInfo, split_type: str) -> None:
    for sub in ("raw", f"split/{split_type}", "processed"):
        (folder / sub).mkdir(parents=True)
    (folder / "RELEASE_v1.txt").write_text(
        f"# Release note for {info.ogb_name}\n\n### v1\n\nJune 10, 2020: Major release\n\n")


def _write_ddi(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    _save_splits(folder / "split" / "target", _pair_splits(folder, size, rng))


def _write_ppa(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    splits = _pair_splits(folder, size, rng)
    if size.feature_dim:
        _write_csv_gz(folder / "raw" / "node-feat.csv.gz",
                      _species_one_hot(rng, size.num_nodes, size.feature_dim))
    _save_splits(folder / "split" / "throughput", splits)


def _write_collab(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    splits = _pair_splits(folder, size, rng)
    if size.feature_dim:
        _write_features(folder, rng, size.num_nodes, size.feature_dim)
    for part, (low, high) in zip(splits, ((2000, 2018), (2018, 2019), (2019, 2020)), strict=True):
        part["weight"] = rng.geometric(0.6, size=len(part["edge"])).astype(np.int64)
        part["year"] = rng.integers(low, high, size=len(part["edge"]), dtype=np.int64)
    _write_csv_gz(folder / "raw" / "edge_weight.csv.gz", [[splits[0]["weight"]]])
    _write_csv_gz(folder / "raw" / "edge_year.csv.gz", [[splits[0]["year"]]])
    _save_splits(folder / "split" / "time", splits)


def _write_citation2(folder: Path, size: StandinSize, rng: np.random.Generator) -> None:
    keys, (train, valid, test) = _positives(rng, size, directed=True)
    _write_graph(folder, size.num_nodes, train)
    if size.feature_dim:
        _write_features(folder, rng, size.num_nodes, size.feature_dim)
    years = rng.integers(2000, 2020, size=size.num_nodes, dtype=np.int64)
    _write_csv_gz(folder / "raw" / "node_year.csv.gz", [[years]])
    split = folder / "split" / "time"
    _save(split / "train.pt", _source_target(train))
    for name, pairs, per_source in (("valid", valid, size.valid_neg),
                                    ("test", test, size.test_neg)):
        part = _source_target(pairs)
        part["target_node_neg"] = _negative_targets(rng, keys, size.num_nodes,
                                                    part["source_node"], per_source)
        _save(split / f"{name}.pt", part)
        del part  # frees valid's negatives before test's are drawn


_WRITERS = {"ddi": _write_ddi, "collab": _write_collab, "ppa": _write_ppa,
            "citation2": _write_citation2}


def _pair_splits(folder: Path, size: StandinSize, rng: np.random.Generator) -> list[dict]:
    """Draws an undirected graph, writes its training edges to ``raw/`` and
    returns the ``edge``/``edge_neg`` dicts of train, valid and test."""
    keys, (train, valid, test) = _positives(rng, size, directed=False)
    _write_graph(folder, size.num_nodes, train)
    negatives = _negative_pairs(rng, keys, size.num_nodes, size.valid_neg + size.test_neg)
    return [{"edge": train},
            {"edge": valid, "edge_neg": negatives[:size.valid_neg]},
            {"edge": test, "edge_neg": negatives[size.valid_neg:]}]


def _positives(rng: np.random.Generator, size: StandinSize,
               directed: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """The sorted keys of every edge (a few surplus non-positives included)
    and the train (sorted), valid and test pairs, disjoint."""
    keys = _distinct_keys(rng, size.num_nodes, size.positives, directed)
    chosen = keys[rng.permutation(len(keys))[:size.positives]]
    train, valid, test = np.split(chosen, [size.train, size.train + size.valid])
    train.sort()
    return keys, [_decode(part, size.num_nodes) for part in (train, valid, test)]


def _distinct_keys(rng: np.random.Generator, num_nodes: int, count: int,
                   directed: bool) -> np.ndarray:
    """At least ``count`` distinct Chung–Lu pairs as sorted keys ``u * N + v``
    (``u < v`` unless ``directed``), without self-loops."""
    cap = 1 / np.sqrt(count if directed else 2 * count)
    p_out = _node_probabilities(rng, num_nodes, cap)
    p_in = _node_probabilities(rng, num_nodes, cap) if directed else p_out
    keys, batch = np.empty(0, dtype=np.int64), count + count // 16 + 64
    for _ in range(_MAX_ROUNDS):
        before = len(keys)
        sources, targets = _endpoints(rng, p_out, batch), _endpoints(rng, p_in, batch)
        rng.shuffle(targets)
        keep = sources != targets
        fresh = _encode(sources[keep], targets[keep], num_nodes, directed)
        del sources, targets, keep
        keys = _sorted_unique(np.concatenate([keys, fresh]))
        if len(keys) >= count:
            return keys
        gained = max(len(keys) - before, 1)
        batch = int((count - len(keys)) * batch / gained * 1.1) + 64
    raise PLNLPError(f"could not draw {count:,} distinct edges among {num_nodes:,} nodes; "
                     "use more nodes or fewer edges.")


def _node_probabilities(rng: np.random.Generator, num_nodes: int, cap: float) -> np.ndarray:
    r"""Power-law weights :math:`i^{-1/(\gamma - 1)}` normalised to sum 1,
    the largest capped at ``cap`` (the rest scaled up to keep the sum),
    assigned to the nodes in random order."""
    if cap * num_nodes <= 1:
        return np.full(num_nodes, 1 / num_nodes)
    weights = np.arange(1, num_nodes + 1, dtype=np.float64) ** (-1 / (DEGREE_EXPONENT - 1))
    tail = np.cumsum(weights[::-1])[::-1]  # tail[k]: sum of weights k, k + 1, ...
    capped = np.arange(num_nodes)
    scale = (1 - capped * cap) / tail
    first = int(np.argmax(weights * scale <= cap))  # fewest capped that fit under the cap
    probabilities = weights * scale[first]
    probabilities[:first] = cap
    return probabilities[rng.permutation(num_nodes)] / probabilities.sum()


def _endpoints(rng: np.random.Generator, probabilities: np.ndarray, count: int) -> np.ndarray:
    """``count`` nodes drawn in proportion to ``probabilities``, sorted."""
    counts = rng.multinomial(count, probabilities)
    return np.repeat(np.arange(len(probabilities), dtype=np.int64), counts)


def _encode(sources: np.ndarray, targets: np.ndarray, num_nodes: int,
            directed: bool) -> np.ndarray:
    if directed:
        return sources * num_nodes + targets
    return np.minimum(sources, targets) * num_nodes + np.maximum(sources, targets)


def _decode(keys: np.ndarray, num_nodes: int) -> np.ndarray:
    pairs = np.empty((len(keys), 2), dtype=np.int64)
    np.divmod(keys, num_nodes, out=(pairs[:, 0], pairs[:, 1]))
    return pairs


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    # np.unique is many times slower than a sort and a mask on large arrays
    keys.sort()
    first = np.empty(len(keys), dtype=bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first]


def _taken(keys: np.ndarray, num_nodes: int, sources: np.ndarray, targets: np.ndarray,
           directed: bool) -> np.ndarray:
    """Which pairs are self-loops or edges, ``keys`` being sorted edge keys."""
    queries = _encode(sources, targets, num_nodes, directed)
    order = np.argsort(queries)  # sorted queries make the search cache-friendly
    found = np.searchsorted(keys, queries[order])
    hit = np.empty(len(queries), dtype=bool)
    hit[order] = keys[np.minimum(found, len(keys) - 1)] == queries[order]
    return hit | (sources == targets)


def _negative_pairs(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                    count: int) -> np.ndarray:
    """``count`` uniform random node pairs that are no edges nor self-loops."""
    pairs = rng.integers(num_nodes, size=(count, 2), dtype=np.int64)
    _redraw_taken(rng, keys, num_nodes, pairs[:, 0], pairs[:, 1], directed=False,
                  redraw_sources=True)
    return pairs


def _negative_targets(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                      sources: np.ndarray, per_source: int) -> np.ndarray:
    """``per_source`` uniform random targets of each source that are no
    out-neighbours nor the source itself, shape ``[len(sources), per_source]``."""
    targets = rng.integers(num_nodes, size=(len(sources), per_source), dtype=np.int64)
    rows = max(1, _CHUNK // per_source)
    for start in range(0, len(sources), rows):
        block = targets[start:start + rows].reshape(-1)
        _redraw_taken(rng, keys, num_nodes, np.repeat(sources[start:start + rows], per_source),
                      block, directed=True, redraw_sources=False)
    return targets


def _redraw_taken(rng: np.random.Generator, keys: np.ndarray, num_nodes: int,
                  sources: np.ndarray, targets: np.ndarray, directed: bool,
                  redraw_sources: bool) -> None:
    """Redraws, in place, the pairs ``(sources[i], targets[i])`` that are
    self-loops or edges until none is."""
    pending = np.arange(len(targets))
    for _ in range(_MAX_ROUNDS):
        pending = pending[_taken(keys, num_nodes, sources[pending], targets[pending], directed)]
        if len(pending) == 0:
            return
        if redraw_sources:
            sources[pending] = rng.integers(num_nodes, size=len(pending))
        targets[pending] = rng.integers(num_nodes, size=len(pending))
    raise PLNLPError(f"could not draw negatives that are no edges among {num_nodes:,} nodes; "
                     "use more nodes or fewer edges.")


def _source_target(pairs: np.ndarray) -> dict[str, np.ndarray]:
    return {"source_node": np.ascontiguousarray(pairs[:, 0]),
            "target_node": np.ascontiguousarray(pairs[:, 1])}


def _species_one_hot(rng: np.random.Generator, num_nodes: int,
                     dim: int) -> Iterable[list[np.ndarray]]:
    """Column chunks of one-hot species (0/1 integers), species drawn Zipf-like."""
    weights = 1 / np.arange(1, dim + 1)
    rows = max(1, _CHUNK // dim)
    for start in range(0, num_nodes, rows):
        species = rng.choice(dim, size=min(rows, num_nodes - start), p=weights / weights.sum())
        one_hot = np.zeros((dim, len(species)), dtype=np.int8)
        one_hot[species, np.arange(len(species))] = 1
        yield list(one_hot)


def _write_features(folder: Path, rng: np.random.Generator, num_nodes: int, dim: int) -> None:
    """Standard normal float features, four decimals, to ``raw/node-feat.csv.gz``."""
    def chunks() -> Iterable[list[np.ndarray]]:
        rows = max(1, _CHUNK // dim)
        for start in range(0, num_nodes, rows):
            values = rng.normal(size=(min(rows, num_nodes - start), dim)).round(4)
            yield list(np.ascontiguousarray(values.T, dtype=np.float32))

    _write_csv_gz(folder / "raw" / "node-feat.csv.gz", chunks())


def _write_graph(folder: Path, num_nodes: int, edges: np.ndarray) -> None:
    """``raw/edge.csv.gz`` and the node and edge counts."""
    rows = _CHUNK // 2
    _write_csv_gz(folder / "raw" / "edge.csv.gz",
                  ([np.ascontiguousarray(edges[i:i + rows, 0]),
                    np.ascontiguousarray(edges[i:i + rows, 1])]
                   for i in range(0, len(edges), rows)))
    _write_csv_gz(folder / "raw" / "num-node-list.csv.gz", [[np.array([num_nodes])]])
    _write_csv_gz(folder / "raw" / "num-edge-list.csv.gz", [[np.array([len(edges)])]])


def _write_csv_gz(path: Path, chunks: Iterable[Sequence[np.ndarray]]) -> None:
    """Rows of the column chunks as headerless CSV, gzip level 1 (level 9,
    pyarrow's default, takes minutes on the real sizes) with no timestamp,
    so equal content gives equal files."""
    options = pacsv.WriteOptions(include_header=False)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                compresslevel=1, mtime=0) as out:
        for columns in chunks:
            table = pa.table({str(i): column for i, column in enumerate(columns)})
            pacsv.write_csv(table, out, options)


def _save_splits(folder: Path, splits: list[dict]) -> None:
    for name, part in zip(("train", "valid", "test"), splits, strict=True):
        _save(folder / f"{name}.pt", part)


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    torch.save(arrays, path, _use_new_zipfile_serialization=False)
