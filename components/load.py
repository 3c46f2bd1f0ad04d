"""Stage ``load``: an OGB dataset folder, or a graph of one's own, to
canonical Parquet splits with the training graph's CSR as ``.npy`` files
(see :func:`~components.storage.parquet_io.write_split`), cached (see
:mod:`components.storage.stage_cache`) by the files the loader reads and how
it reads them."""
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import ray

from components.artifacts import DatasetArtifact
from components.scheduling import ANYWHERE
from components.storage.location import Location, node_scratch_dir
from components.storage.parquet_io import NODE_IDS_FILE, write_split
from components.storage.split_meta import META_FILE, DatasetMeta
from components.storage.stage_cache import CacheEntry, cache_key, cached, local_entry, reuse
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.data.ogb_reader import load_ogb, split_type
from plnlp_core.data.own_graph import GraphReport, load_own_graph, parse_split
from plnlp_core.data.planetoid import PLANETOID_FOLDER, load_planetoid
from plnlp_core.data.publishing import publish
from plnlp_core.errors import PLNLPError

REPORT_FILE = "report.json"

# Bump when write_split's output changes for the same OGB files.
LOAD_FORMAT = 3  # 2: own graphs leave out the Hits@K their negatives cannot tell;
# 3: the training graph's CSR and the node features as .npy (workers map them)


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_dataset(dataset: str, data_root: Location, cache_root: Location) -> DatasetArtifact:
    """Loads ``dataset`` from OGB's folder under ``data_root`` (see
    :func:`plnlp_core.data.ogb_reader.load_ogb`; a folder in object storage is
    first copied to this node, see :func:`local_data_root`) into an entry
    of the stage cache at ``cache_root`` (see :class:`DatasetArtifact`), or
    reuses the entry written from the same files."""
    info = DATASETS.get(dataset)
    preloaded = None
    if data_root.is_local and not (data_root.local_path() / info.dir_name).is_dir():
        preloaded = load_ogb(info, data_root.local_path())  # OGB downloads it, or says why not
    inputs = load_inputs(info, data_root)

    def write(scratch: Path) -> None:
        write_split(preloaded if preloaded is not None
                    else load_ogb(info, local_data_root(info, data_root)), scratch)

    return _artifact(cached(cache_root, "load", inputs, write))


def loaded_dataset(dataset: str, data_root: Location,
                   cache_root: Location) -> DatasetArtifact | None:
    """The verified entry :func:`load_dataset` would reuse, read here
    without a Ray task (which would start a process and import torch and
    OGB for a lookup); ``None`` when there is none yet."""
    info = DATASETS.get(dataset)
    if data_root.is_local and not (data_root.local_path() / info.dir_name).is_dir():
        return None
    return _artifact(reuse(cache_root, "load", load_inputs(info, data_root)))


def loaded_own_dataset(path: str, options: "OwnGraphOptions",
                       cache_root: Location) -> DatasetArtifact | None:
    """As :func:`loaded_dataset`, for :func:`load_own_dataset`'s entry."""
    return _artifact(reuse(cache_root, "load", own_load_inputs(path, options)))


def _artifact(entry: CacheEntry | None) -> DatasetArtifact | None:
    if entry is None:
        return None
    return DatasetArtifact(entry.location, DatasetMeta.from_json(entry.read_text(META_FILE)))


def load_inputs(info: DatasetInfo, data_root: Location) -> dict:
    """What the ``load`` entry of ``info`` is keyed on: the dataset, its
    folder's absolute path or URI, and the relative path, size and mtime of
    every file the loader reads there (not their contents: ppa's are 700 MB)."""
    folder = data_root / info.dir_name
    found = folder.files()
    read = ["raw/num-node-list.csv.gz", "raw/node-feat.csv.gz",
            *sorted(name for name in found
                    if name.startswith(f"split/{split_type(info)}/") and name.endswith(".pt")
                    and name.count("/") == 2)]
    files = {name: [found[name].size, found[name].mtime_ns] for name in read if name in found}
    return {"dataset": info.name, "folder": folder.uri, "files": files, "format": LOAD_FORMAT}


def local_data_root(info: DatasetInfo, data_root: Location) -> Path:
    """A local folder holding OGB's folder of ``info``: ``data_root`` itself,
    or, in object storage, this node's copy of ``<data_root>/<dir_name>``,
    made once per content (the files' sizes and mtimes) and checked by size."""
    if data_root.is_local:
        return data_root.local_path()
    source = data_root / info.dir_name
    found = {name: file.size for name, file in source.files().items()}
    if not found:
        raise PLNLPError(f"--data-root {data_root.uri} holds no {info.dir_name} folder; copy "
                         f"OGB's {info.dir_name} folder there, or give a local --data-root.")
    stamp = cache_key("data", load_inputs(info, data_root))
    root = node_scratch_dir() / "datasets" / stamp
    root.mkdir(parents=True, exist_ok=True)
    if not (root / info.dir_name).is_dir():
        publish(root / info.dir_name, lambda scratch: _copy_checked(source, found, scratch))
    return root


def _copy_checked(source: Location, sizes: dict[str, int], scratch: Path) -> None:
    source.download(scratch)
    for name, size in sizes.items():
        copied = scratch / name
        if not copied.is_file() or copied.stat().st_size != size:
            raise PLNLPError(f"copying {source.uri}/{name} to this node went wrong (its size "
                             "differs); run again.")


@dataclass(frozen=True)
class OwnGraphOptions:
    """How a graph of one's own is read (see :func:`load_own_graph`)."""

    split: str
    split_seed: int
    directed: bool
    features: str | None
    hits_k: tuple[int, ...]


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_own_dataset(path: str, options: OwnGraphOptions,
                     cache_root: Location) -> DatasetArtifact:
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

    return _artifact(cached(cache_root, "load", own_load_inputs(path, options), write))


@dataclass(frozen=True)
class DrawnSplit:
    """How a graph without a published split (Planetoid's) is split: its
    ``split`` spec (``random:TRAIN,VALID,TEST``) and the seed of the split
    and its negatives."""

    split: str
    split_seed: int


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_planetoid_dataset(dataset: str, drawn: DrawnSplit, data_root: Location,
                           cache_root: Location) -> DatasetArtifact:
    """Reads the Planetoid graph ``dataset`` from ``<data_root>/planetoid``
    (see :func:`plnlp_core.data.planetoid.load_planetoid`: each raw file
    checked against its published sha256 before PyG unpickles it) and
    splits it as ``drawn`` says, into an entry of the stage cache at
    ``cache_root``, or reuses the entry of the same files split the same way."""
    info = DATASETS.get(dataset)
    _, fractions = parse_split(drawn.split)

    def write(scratch: Path) -> None:
        root = data_root.local_path() if data_root.is_local else _planetoid_copy(info, data_root)
        work = node_scratch_dir() / "planetoid" / cache_key("data", planetoid_inputs(
            info, drawn, data_root))
        write_split(load_planetoid(info, root, work, fractions, drawn.split_seed), scratch)

    return _artifact(cached(cache_root, "load", planetoid_inputs(info, drawn, data_root), write))


def loaded_planetoid_dataset(dataset: str, drawn: DrawnSplit, data_root: Location,
                             cache_root: Location) -> DatasetArtifact | None:
    """As :func:`loaded_dataset`, for :func:`load_planetoid_dataset`'s entry."""
    return _artifact(reuse(cache_root, "load",
                           planetoid_inputs(DATASETS.get(dataset), drawn, data_root)))


def planetoid_inputs(info: DatasetInfo, drawn: DrawnSplit, data_root: Location) -> dict:
    """What the ``load`` entry of a Planetoid graph is keyed on: its raw
    folder's URI, the size and mtime of each raw file there, and the split."""
    folder = data_root / PLANETOID_FOLDER / info.planetoid_name / "raw"
    found = folder.files() if not data_root.is_local or folder.local_path().is_dir() else {}
    files = {name: [file.size, file.mtime_ns] for name, file in sorted(found.items())}
    return {"dataset": info.name, "folder": folder.uri, "files": files,
            "drawn": dataclasses.asdict(drawn), "format": LOAD_FORMAT}


def _planetoid_copy(info: DatasetInfo, data_root: Location) -> Path:
    """This node's copy of ``<data_root>/planetoid/<Name>/raw`` in object storage."""
    source = data_root / PLANETOID_FOLDER / info.planetoid_name / "raw"
    sizes = {name: file.size for name, file in source.files().items()}
    root = node_scratch_dir() / "datasets" / cache_key("planetoid", {"folder": source.uri,
                                                                     "files": sizes})
    raw = root / PLANETOID_FOLDER / info.planetoid_name / "raw"
    if not raw.is_dir():
        raw.parent.mkdir(parents=True, exist_ok=True)
        publish(raw, lambda scratch: _copy_checked(source, sizes, scratch))
    return root


def log_graph(dataset: DatasetArtifact) -> None:
    """For a graph of one's own: what reading it dropped or noticed (its
    entry's ``report.json``) and its node id mapping, logged to the active
    MLflow run by :func:`components.recording.run_records.log_graph_report`.
    Nothing for OGB datasets."""
    if dataset.meta.info is None:  # OGB's
        return
    directory = local_entry(dataset.directory)
    if not (directory / REPORT_FILE).exists():
        return
    # MLflow loads here, in the driver: not in the load task that imports this module.
    from components.recording.run_records import log_graph_report

    report = GraphReport(**json.loads((directory / REPORT_FILE).read_text()))
    log_graph_report(dataset.meta.dataset, report, directory / NODE_IDS_FILE)


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
