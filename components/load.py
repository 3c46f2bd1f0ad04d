"""Stage ``load``: an OGB dataset folder, or a graph of one's own, to
canonical Parquet splits, cached (see :mod:`components.stage_cache`) by the
files the loader reads and how it reads them."""
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import ray

from components.artifacts import DatasetArtifact, DatasetMeta
from components.parquet_io import NODE_IDS_FILE, write_split
from components.scheduling import ANYWHERE
from components.stage_cache import CacheEntry, cached, reuse
from plnlp_core.datasets import DATASETS, DatasetInfo
from plnlp_core.ogb_reader import load_ogb, split_type
from plnlp_core.own_graph import load_own_graph

REPORT_FILE = "report.json"

# Bump when write_split's output changes for the same OGB files.
LOAD_FORMAT = 2  # 2: own graphs leave out the Hits@K their negatives cannot tell


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_dataset(dataset: str, data_root: str, cache_root: str) -> DatasetArtifact:
    """Loads ``dataset`` from OGB's folder under ``data_root`` (see
    :func:`plnlp_core.ogb_reader.load_ogb`) into an entry of the stage cache
    at ``cache_root`` (see :class:`DatasetArtifact`), or reuses the entry
    written from the same files."""
    info = DATASETS.get(dataset)
    root = Path(data_root).resolve()
    preloaded = None
    if not (root / info.dir_name).is_dir():  # OGB downloads it, or says why it cannot
        preloaded = load_ogb(info, root)

    def write(scratch: Path) -> None:
        write_split(preloaded if preloaded is not None else load_ogb(info, root), scratch)

    entry = cached(Path(cache_root), "load", load_inputs(info, root), write)
    return DatasetArtifact(str(entry.path), DatasetMeta.read(entry.path))


def loaded_dataset(dataset: str, data_root: str, cache_root: str) -> DatasetArtifact | None:
    """The verified entry :func:`load_dataset` would reuse, read here
    without a Ray task (which would start a process and import torch and
    OGB for a lookup); ``None`` when there is none yet."""
    info = DATASETS.get(dataset)
    root = Path(data_root).resolve()
    if not (root / info.dir_name).is_dir():
        return None
    return _artifact(reuse(Path(cache_root), "load", load_inputs(info, root)))


def loaded_own_dataset(path: str, options: "OwnGraphOptions",
                       cache_root: str) -> DatasetArtifact | None:
    """As :func:`loaded_dataset`, for :func:`load_own_dataset`'s entry."""
    return _artifact(reuse(Path(cache_root), "load", own_load_inputs(path, options)))


def _artifact(entry: CacheEntry | None) -> DatasetArtifact | None:
    return None if entry is None else DatasetArtifact(str(entry.path),
                                                      DatasetMeta.read(entry.path))


def load_inputs(info: DatasetInfo, data_root: Path) -> dict:
    """What the ``load`` entry of ``info`` is keyed on: the dataset, its
    folder's absolute path, and the relative path, size and mtime of every
    file the loader reads there (not their contents: ppa's are 700 MB)."""
    folder = data_root.resolve() / info.dir_name
    read = [folder / "raw" / "num-node-list.csv.gz", folder / "raw" / "node-feat.csv.gz",
            *sorted((folder / "split" / split_type(info)).glob("*.pt"))]
    files = {}
    for path in read:
        if path.is_file():
            stat = path.stat()
            files[path.relative_to(folder).as_posix()] = [stat.st_size, stat.st_mtime_ns]
    return {"dataset": info.name, "folder": str(folder), "files": files,
            "format": LOAD_FORMAT}


@dataclass(frozen=True)
class OwnGraphOptions:
    """How a graph of one's own is read (see :func:`load_own_graph`)."""

    split: str
    split_seed: int
    directed: bool
    features: str | None
    hits_k: tuple[int, ...]


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_own_dataset(path: str, options: OwnGraphOptions, cache_root: str) -> DatasetArtifact:
    """Reads the edge list or split folder at ``path`` into an entry of the
    stage cache at ``cache_root``, with the node id mapping
    (``node_ids.parquet``: ``id``, ``index``) and what reading dropped or
    noticed (``report.json``), or reuses the entry of the same files read
    the same way."""

    def write(scratch: Path) -> None:
        graph = load_own_graph(path, options.split, options.directed, options.split_seed,
                               options.features, options.hits_k)
        write_split(graph.split, scratch)
        pq.write_table(graph.node_ids, scratch / NODE_IDS_FILE)
        (scratch / REPORT_FILE).write_text(json.dumps(dataclasses.asdict(graph.report)))

    entry = cached(Path(cache_root), "load", own_load_inputs(path, options), write)
    return DatasetArtifact(str(entry.path), DatasetMeta.read(entry.path))


def own_load_inputs(path: str, options: OwnGraphOptions) -> dict:
    """What the ``load`` entry of a graph of one's own is keyed on: its
    files' paths, sizes and mtimes, and how it is read."""
    return {"files": _file_stamps([Path(path), *([Path(options.features)]
                                                if options.features else [])]),
            "options": dataclasses.asdict(options), "format": LOAD_FORMAT}


def _file_stamps(paths: list[Path]) -> dict[str, list[int]]:
    """The absolute path, size and mtime of every file at ``paths`` (files,
    or the files of folders)."""
    files = [p for path in paths for p in ([path] if path.is_file() else sorted(path.iterdir()))]
    return {str(p.resolve()): [p.stat().st_size, p.stat().st_mtime_ns] for p in files
            if p.is_file()}
