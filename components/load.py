"""Stage ``load``: an OGB dataset folder to canonical Parquet splits, cached
(see :mod:`components.stage_cache`) by the files the loader reads."""
from pathlib import Path

import ray

from components.artifacts import DatasetArtifact, DatasetMeta
from components.parquet_io import write_split
from components.scheduling import ANYWHERE
from components.stage_cache import cached
from plnlp_core.datasets import DATASETS, DatasetInfo, load_ogb, split_type

# Bump when write_split's output changes for the same OGB files.
LOAD_FORMAT = 1


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_dataset(dataset: str, data_root: str, cache_root: str) -> DatasetArtifact:
    """Loads ``dataset`` from OGB's folder under ``data_root`` (see
    :func:`plnlp_core.datasets.load_ogb`) into an entry of the stage cache
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
