"""What a run's splits are, as its MLflow dataset records name them (see
:mod:`components.recording.dataset_inputs`): for each of training,
validation and test, the dataset's name, where its data came from, a digest
of that split's files and its counts, read from the ``load`` entry's
``manifest.json`` (the files' sha256 and rows, and the inputs that made the
entry) and ``meta.json``."""
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from components.storage.location import Location
from components.storage.manifest import digest, read_manifest
from components.storage.split_meta import DatasetMeta

SPLIT_FILES = {
    "training": ("train.parquet", None),
    "validation": ("valid_pos.parquet", "valid_neg.parquet"),
    "test": ("test_pos.parquet", "test_neg.parquet"),
}
"""Each split's MLflow context, and its positive and negative pairs' files
(training's negatives are sampled each epoch: it has no file of them)."""

DIGEST_LENGTH = 16  # MLflow keeps at most 36 characters


@dataclass(frozen=True)
class SplitInput:
    """One split as an MLflow dataset input: ``context`` (``training``,
    ``validation`` or ``test``), ``name`` (the OGB name, or a graph of
    one's own's), ``source`` (the path or URI the data was read from),
    ``digest`` (of the split's files and split seed: equal for the same
    split, different for another) and ``counts`` (``nodes``, ``edges``:
    the split's positive pairs, ``negatives`` and ``pairs``: both)."""

    context: str
    name: str
    source: str
    digest: str
    counts: dict[str, int]


def split_inputs(directory: Location, meta: DatasetMeta) -> list[SplitInput]:
    """The training, validation and test splits of the ``load`` output at
    ``directory`` (see :class:`components.artifacts.DatasetArtifact`). An
    entry of the stage cache says them from its manifest; a folder without
    one (a Kubeflow step's copy) is read here when it is local."""
    manifest = read_manifest(directory) or {}
    files = manifest.get("files") if isinstance(manifest.get("files"), dict) else None
    if files is None:
        files = _describe(directory)
    inputs = manifest.get("inputs") if isinstance(manifest.get("inputs"), dict) else {}
    seed = split_seed(inputs)
    source = data_source(inputs) or directory.uri
    name = meta.dataset_info().ogb_name if meta.info is None else meta.dataset
    found = []
    for context, (positive, negative) in SPLIT_FILES.items():
        names = [name for name in (positive, negative) if name]
        edges = files.get(positive, {}).get("rows", meta.num_train_edges
                                            if context == "training" else 0)
        negatives = files.get(negative, {}).get("rows", 0) if negative else 0
        fingerprint = {"files": {name: files.get(name, {}).get("sha256") for name in names},
                       "split_seed": seed, "dataset": meta.dataset}
        found.append(SplitInput(
            context=context, name=name, source=source,
            digest=digest(fingerprint)[:DIGEST_LENGTH],
            counts={"nodes": meta.num_nodes, "edges": edges, "negatives": negatives,
                    "pairs": edges + negatives}))
    return found


def split_seed(inputs: dict) -> int | None:
    """The seed the ``load`` entry made from ``inputs`` split its graph with:
    a graph of one's own's (``options``), a Planetoid graph's (``drawn``);
    ``None`` for OGB's published splits."""
    for key in ("options", "drawn"):
        if isinstance(inputs.get(key), dict) and "split_seed" in inputs[key]:
            return inputs[key]["split_seed"]
    return None


def data_source(inputs: dict) -> str | None:
    """Where the ``load`` entry made from ``inputs`` read its data: OGB's
    folder, or a graph of one's own's edge list or split folder (its
    feature file aside); ``None`` when ``inputs`` says neither."""
    if isinstance(inputs.get("folder"), str):
        return inputs["folder"]
    files = inputs.get("files")
    if not isinstance(files, dict) or not files:
        return None
    features = (inputs.get("options") or {}).get("features")
    features = str(Path(features).resolve()) if features else None
    paths = [path for path in files if features is None or not (
        path == features or path.startswith(features + os.sep))] or list(files)
    return paths[0] if len(paths) == 1 else os.path.commonpath(paths)


def _describe(directory: Location) -> dict[str, dict]:
    """The sha256 and rows of the split files of a local folder (a remote
    one without a manifest is not read: its digests then cover its meta)."""
    if not directory.is_local:
        return {}
    described = {}
    for name in (name for pair in SPLIT_FILES.values() for name in pair if name):
        path = directory.local_path() / name
        if path.is_file():
            sha = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(block)
            described[name] = {"sha256": sha.hexdigest(),
                               "rows": pq.ParquetFile(path).metadata.num_rows}
    return described
