"""Stage ``heart``: HeaRT's hard negatives (Li et al., 2023) of the
validation and test positives, built once per split and number of negatives
by one Ray task and kept in the stage cache beside the splits, so that every
run and sweep trial of the dataset (a heuristic's included) ranks its
positives against the same negatives (see
:func:`plnlp_core.scoring.hard_negatives.split_hard_negatives`)."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import torch
from torch import Tensor

from components.artifacts import DatasetArtifact, HeartArtifact
from components.scheduling import ANYWHERE
from components.storage.parquet_io import fixed_size_rows, read_split, rows_tensor
from components.storage.stage_cache import cached, content_digest, local_entry
from plnlp_core.scoring.hard_negatives import split_hard_negatives

PARTS = ("valid", "test")
NEGATIVES_COLUMN = "negatives"
HEART_VERSION = 1
"""Part of the entry's key: raised when the negatives' construction changes,
so that no run reads negatives an older construction made."""


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def _build(dataset: DatasetArtifact, num_negatives: int, threads: int) -> dict[str, Tensor]:
    """The negatives of each part, as int32 (node ids fit), returned to the
    builder (on a cluster the task may run on a node that does not see its
    folder)."""
    torch.set_num_threads(threads)
    split = read_split(local_entry(dataset.directory))
    return {part: negatives.to(torch.int32)
            for part, negatives in split_hard_negatives(split, num_negatives).items()}


def heart_negatives(dataset: DatasetArtifact, num_negatives: int, cache_root: str,
                    cpus: int = 1) -> HeartArtifact:
    """The entry of ``dataset``'s HeaRT negatives, ``num_negatives`` a
    positive, under ``cache_root``: reused when the same splits made it,
    else built by one task holding ``cpus`` CPUs (ogbl-ddi: about 2 minutes
    on 2 cores)."""
    inputs = {"splits": content_digest(dataset.directory), "num_negatives": num_negatives,
              "seed": 0, "version": HEART_VERSION}
    entry = cached(cache_root, "heart", inputs,
                   lambda scratch: _write(dataset, num_negatives, cpus, scratch))
    return HeartArtifact(entry.uri, num_negatives)


def _write(dataset: DatasetArtifact, num_negatives: int, cpus: int, out: Path) -> None:
    parts = ray.get(_build.options(num_cpus=cpus).remote(dataset, num_negatives, cpus))
    for part, negatives in parts.items():
        pq.write_table(pa.table({NEGATIVES_COLUMN: fixed_size_rows(negatives)}),
                       out / f"{part}.parquet")


def read_heart_negatives(heart: HeartArtifact) -> dict[str, Tensor]:
    """Each part's negatives ``[P, K]`` (int64, as the split's pairs), from
    this node's copy of the entry."""
    directory = local_entry(heart.directory)
    return {part: rows_tensor(pq.read_table(directory / f"{part}.parquet")
                              .column(NEGATIVES_COLUMN)).long()
            for part in PARTS}
