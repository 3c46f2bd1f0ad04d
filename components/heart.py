"""Stage ``heart``: HeaRT's hard negatives (Li et al., 2023) of the
validation and test positives, built once per split, number of negatives and
mode (or read from HeaRT's published files) by one Ray task, with their
ceilings, and kept in the stage cache beside the splits, so that every run and
sweep trial of the dataset (a heuristic's included) ranks its positives
against the same negatives (see
:func:`plnlp_core.scoring.heart.split_heart_negatives`). Runs, sweeps and the
kubeflow evaluate step ask :func:`heart_stage`; the evaluate stage
(:mod:`components.evaluate`) and the Train worker read the entry with
:func:`read_heart_negatives`."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import torch

from components.artifacts import DatasetArtifact, HeartArtifact
from components.scheduling import ANYWHERE
from components.storage.location import Location, local_copy
from components.storage.manifest import content_digest
from components.storage.parquet_io import fixed_size_rows, read_split, rows_tensor
from components.storage.stage_cache import cached, local_entry
from plnlp_core.config import PLNLPConfig
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.heart import HardNegatives, split_heart_negatives
from plnlp_core.scoring.heart_files import FILE_NAMES, HeartFileError

PARTS = ("valid", "test")
NEGATIVES_COLUMN = "negatives"
CEILING_FILE = "ceiling.json"
HEART_VERSION = 2
"""Part of the entry's key: raised when the negatives' construction changes,
so that no run reads negatives an older construction made (2: HeaRT's own
generator and masks, the ceiling)."""


def heart_stage(dataset: DatasetArtifact, config: PLNLPConfig, cpus: int = 1,
                cache_root: "Location | None" = None) -> HeartArtifact | None:
    """HeaRT's negatives for ``config`` (``None`` when ``heart_negatives`` is
    0), cached under ``cache_root`` (default: beside ``dataset``'s splits):
    built by the first run or sweep that asks, with ``cpus`` CPUs, and
    reused by the rest. HeaRT's files, when the config names them
    (``heart_files``: a folder or a URI), become a Location here."""
    if not config.heart_negatives:
        return None
    files = Location(config.heart_files) if config.heart_files else None
    return heart_negatives(dataset, config.heart_negatives, cache_root or dataset.directory.parent,
                           cpus, config.heart_mode, files)


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def _build(dataset: DatasetArtifact, num_negatives: int, mode: str, files: Location | None,
           threads: int) -> HardNegatives:
    """The negatives of each part (int32: node ids fit), returned to the
    builder (on a cluster the task may run on a node that does not see its
    folder)."""
    torch.set_num_threads(threads)
    split = read_split(local_entry(dataset.directory))
    try:
        if files is None:
            hard = split_heart_negatives(split, num_negatives, mode)
        else:
            with local_copy(files) as folder:  # object storage: a scratch copy
                hard = split_heart_negatives(split, num_negatives, mode, folder)
    except HeartFileError as error:
        raise PLNLPError(str(error)) from None
    return HardNegatives(hard.mode, {p: pos.to(torch.int32) for p, pos in hard.positives.items()},
                         {p: n.to(torch.int32) for p, n in hard.negatives.items()}, hard.ceiling)


def heart_negatives(dataset: DatasetArtifact, num_negatives: int, cache_root: Location,
                    cpus: int = 1, mode: str = "heart",
                    files: Location | None = None) -> HeartArtifact:
    """The entry of ``dataset``'s hard negatives, ``num_negatives`` a
    positive, under ``mode`` (``heart``, ``heart_filtered``), read from
    HeaRT's published ``files`` when given, under ``cache_root``: reused when
    the same splits (and files) made it, else built by one task holding
    ``cpus`` CPUs (ogbl-ddi: about 2 minutes on 2 cores)."""
    inputs = {"splits": content_digest(dataset.directory), "num_negatives": num_negatives,
              "mode": mode, "files": _files_key(files), "version": HEART_VERSION}
    entry = cached(cache_root, "heart", inputs,
                   lambda scratch: _write(dataset, num_negatives, mode, files, cpus, scratch))
    return HeartArtifact(entry.location, num_negatives, mode)


def _files_key(files: Location | None) -> dict | None:
    """What names HeaRT's files in the entry's key: their folder, sizes and
    times (hashing two files of a gigabyte each would cost more than the
    check is worth)."""
    if files is None:
        return None
    found = {name: info for name, info in files.files().items()
             if name in FILE_NAMES.values()} if files.exists() else {}
    return {"folder": files.uri,
            "files": {name: [info.size, str(info.mtime)] for name, info in sorted(found.items())}}


def _write(dataset: DatasetArtifact, num_negatives: int, mode: str, files: Location | None,
           cpus: int, out: Path) -> None:
    hard = ray.get(_build.options(num_cpus=cpus).remote(dataset, num_negatives, mode, files,
                                                        cpus))
    for part in PARTS:
        pos = hard.positives[part]
        pq.write_table(pa.table({"source": pos[:, 0].numpy(), "target": pos[:, 1].numpy(),
                                 NEGATIVES_COLUMN: fixed_size_rows(hard.negatives[part])}),
                       out / f"{part}.parquet")
    (out / CEILING_FILE).write_text(json.dumps(hard.ceiling, indent=1))


def read_heart_negatives(heart: HeartArtifact) -> HardNegatives:
    """The entry's positives ``[P, 2]`` and negatives ``[P, K]`` of each part
    (int64, as the split's pairs) and the ceilings, from this node's copy of
    the entry."""
    directory = local_entry(heart.directory)
    tables = {part: pq.read_table(directory / f"{part}.parquet") for part in PARTS}
    positives = {part: torch.stack([torch.from_numpy(t.column(c).to_numpy()).long()
                                    for c in ("source", "target")], dim=1)
                 for part, t in tables.items()}
    negatives = {part: rows_tensor(t.column(NEGATIVES_COLUMN)).long()
                 for part, t in tables.items()}
    ceiling = json.loads((directory / CEILING_FILE).read_text())
    return HardNegatives(heart.mode, positives, negatives, ceiling)
