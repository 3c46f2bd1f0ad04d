"""A training run records its training, validation and test splits as
MLflow dataset inputs: named after the dataset, sourced at its data, with a
digest that follows the split and its counts as the profile."""
import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.exceptions import MlflowException

from components.load import OwnGraphOptions, load_inputs, own_load_inputs
from components.recording.dataset_inputs import log_dataset_inputs
from components.storage.location import Location
from components.storage.parquet_io import write_split
from components.storage.split_inputs import split_inputs
from components.storage.split_meta import DatasetMeta
from components.storage.stage_cache import CacheEntry, cached
from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.data.own_graph import load_own_graph
from tests.standin import write_ddi_standin

CONTEXTS = ["test", "training", "validation"]


def own_entry(tmp_path, edges, seed: int) -> CacheEntry:
    """The ``load`` entry of the edge list ``edges`` split with ``seed``, as
    :func:`components.load.load_own_dataset` writes it."""
    options = OwnGraphOptions("random:0.8,0.1,0.1", seed, False, None, (5,))
    return cached(Location(str(tmp_path / "cache")), "load", own_load_inputs(str(edges), options),
                  lambda scratch: write_split(load_own_graph(edges, options.split, False, seed,
                                                             hits_k=(5,)).split, scratch))


def edge_list(tmp_path):
    rng = np.random.default_rng(0)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, 40, (300, 2)) if a != b}
    path = tmp_path / "edges.csv"
    pd.DataFrame(sorted(pairs), columns=["src", "dst"]).to_csv(path, index=False)
    return path


def logged(entry: CacheEntry) -> dict[str, mlflow.entities.Dataset]:
    """Each context's dataset as MLflow gives it back, after logging the
    splits of ``entry`` to a new run."""
    meta = DatasetMeta.from_json(entry.read_text("meta.json"))
    with mlflow.start_run() as run:
        log_dataset_inputs(split_inputs(entry.location, meta))
    inputs = mlflow.get_run(run.info.run_id).inputs.dataset_inputs
    return {next(tag.value for tag in item.tags if tag.key == "mlflow.data.context"): item.dataset
            for item in inputs}


def test_an_ogb_runs_splits_are_named_sourced_and_counted(tmp_path, mlflow_store):
    root = write_ddi_standin(tmp_path / "data")
    info = DATASETS.get("ddi")
    inputs = load_inputs(info, Location(str(root)))
    entry = cached(Location(str(tmp_path / "cache")), "load", inputs,
                   lambda scratch: write_split(load_ogb(info, root), scratch))
    datasets = logged(entry)
    assert sorted(datasets) == CONTEXTS
    assert {dataset.name for dataset in datasets.values()} == {"ogbl-ddi"}
    for dataset in datasets.values():
        assert dataset.source_type == "local"
        assert json.loads(dataset.source)["uri"] == str(root / "ogbl_ddi")
        assert "src" in dataset.schema and "dst" in dataset.schema
    counts = {context: json.loads(dataset.profile) for context, dataset in datasets.items()}
    assert counts["training"] == {"nodes": 60, "edges": 320, "negatives": 0, "pairs": 320}
    assert counts["validation"] == {"nodes": 60, "edges": 40, "negatives": 40, "pairs": 80}
    assert counts["test"] == {"nodes": 60, "edges": 40, "negatives": 40, "pairs": 80}
    assert len({dataset.digest for dataset in datasets.values()}) == 3  # a digest per split


def test_the_digest_follows_the_split_seed(tmp_path, mlflow_store):
    edges = edge_list(tmp_path)
    first, again, other = (logged(own_entry(tmp_path, edges, seed)) for seed in (1, 1, 2))
    for context in CONTEXTS:
        assert first[context].digest == again[context].digest
        assert first[context].digest != other[context].digest
        assert first[context].name == "edges"
        assert json.loads(first[context].source)["uri"] == str(edges.resolve())
    assert json.loads(first["training"].profile)["nodes"] == len(
        set(pd.read_csv(edges).to_numpy().ravel()))


def test_a_resumed_run_logging_its_splits_again_keeps_one_record_each(tmp_path, mlflow_store):
    entry = own_entry(tmp_path, edge_list(tmp_path), 0)
    meta = DatasetMeta.from_json(entry.read_text("meta.json"))
    with mlflow.start_run() as run:
        log_dataset_inputs(split_inputs(entry.location, meta))
        log_dataset_inputs(split_inputs(entry.location, meta))
    assert len(mlflow.get_run(run.info.run_id).inputs.dataset_inputs) == 3


def test_a_split_folder_without_a_manifest_is_read_for_its_digest_and_counts(tmp_path):
    """A Kubeflow step's copy of the splits, which names no split seed."""
    entry = own_entry(tmp_path, edge_list(tmp_path), 0)
    meta = DatasetMeta.from_json(entry.read_text("meta.json"))
    copies = []
    for copy in (tmp_path / "copy", tmp_path / "copy2"):
        copy.mkdir()
        for name in ("train.parquet", "valid_pos.parquet", "valid_neg.parquet",
                     "test_pos.parquet", "test_neg.parquet"):
            (copy / name).write_bytes((entry.path / name).read_bytes())
        copies.append(split_inputs(Location(str(copy)), meta))
    assert [split.digest for split in copies[0]] == [split.digest for split in copies[1]]
    assert ([split.counts for split in copies[0]]
            == [split.counts for split in split_inputs(entry.location, meta)])
    assert copies[0][0].source == Location(str(tmp_path / "copy")).uri


def test_a_planetoid_splits_seed_changes_its_digest(tmp_path):
    """A Planetoid graph's entry names its split seed under ``drawn``."""
    meta = DatasetMeta("cora", 10, False, 4, "hits@100", 8)
    digests = []
    for seed in (1, 1, 2):
        folder = tmp_path / f"entry-{len(digests)}"
        folder.mkdir()
        files = {name: {"sha256": "0" * 64, "rows": 4} for name in (
            "train.parquet", "valid_pos.parquet", "valid_neg.parquet", "test_pos.parquet",
            "test_neg.parquet")}
        inputs = {"folder": "/data/planetoid/Cora/raw",
                  "drawn": {"split": "random:0.7,0.1,0.2", "split_seed": seed}}
        (folder / "manifest.json").write_text(json.dumps({"files": files, "inputs": inputs}))
        splits = split_inputs(Location(str(folder)), meta)
        assert {split.source for split in splits} == {"/data/planetoid/Cora/raw"}
        digests.append([split.digest for split in splits])
    assert digests[0] == digests[1] and all(
        a != b for a, b in zip(digests[0], digests[2], strict=True))


@pytest.mark.parametrize("uri", ["s3://bucket/data/ogbl_ddi", "memory://nowhere"])
def test_a_source_in_object_storage_or_unknown_is_named(uri):
    from components.recording.dataset_inputs import data_source

    assert uri in data_source(uri).to_json()


def test_a_run_that_loses_the_race_to_make_the_dataset_record_logs_it_all_the_same(
        tmp_path, mlflow_store, monkeypatch):
    """Two trials of a sweep logging the same split at once: the store's
    insert of its one record broke the unique key in the slower (SQLite:
    ``UNIQUE constraint failed: datasets...``), which failed that trial."""
    entry = own_entry(tmp_path, edge_list(tmp_path), 0)
    meta = DatasetMeta.from_json(entry.read_text("meta.json"))
    real, calls = mlflow.log_input, []

    def loses_the_first_race(dataset, context):
        calls.append(context)
        if len(calls) == 1:  # the other trial's record was made meanwhile
            real(dataset, context=context)
            raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: "
                                  "datasets.experiment_id, datasets.name, datasets.digest")
        real(dataset, context=context)

    monkeypatch.setattr(mlflow, "log_input", loses_the_first_race)
    with mlflow.start_run() as run:
        log_dataset_inputs(split_inputs(entry.location, meta))
    assert len(mlflow.get_run(run.info.run_id).inputs.dataset_inputs) == 3
    assert len(calls) == 4  # the first split's log tried again, once


def test_a_store_error_that_is_no_race_is_raised_at_once(tmp_path, mlflow_store, monkeypatch):
    entry = own_entry(tmp_path, edge_list(tmp_path), 0)
    meta = DatasetMeta.from_json(entry.read_text("meta.json"))
    calls = []

    def refuses(dataset, context):
        calls.append(context)
        raise MlflowException("the store is read-only")

    monkeypatch.setattr(mlflow, "log_input", refuses)
    with mlflow.start_run(), pytest.raises(MlflowException, match="read-only"):
        log_dataset_inputs(split_inputs(entry.location, meta))
    assert len(calls) == 1
