"""Stage ``load``: an OGB dataset folder to canonical Parquet splits."""
from pathlib import Path

import ray

from components.artifacts import DatasetArtifact, atomic_directory
from components.parquet_io import write_split
from components.scheduling import ANYWHERE
from plnlp_core.datasets import DATASETS, load_ogb


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def load_dataset(dataset: str, data_root: str, out_dir: str) -> DatasetArtifact:
    """Loads ``dataset`` from OGB's folder under ``data_root`` (see
    :func:`plnlp_core.datasets.load_ogb`) and writes its splits to
    ``out_dir`` (see :class:`DatasetArtifact`)."""
    split = load_ogb(DATASETS.get(dataset), Path(data_root))
    with atomic_directory(Path(out_dir)) as scratch:
        meta = write_split(split, scratch)
    return DatasetArtifact(out_dir, meta)
