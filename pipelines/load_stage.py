"""The ``load`` stage as the main job, a sweep and the Kubeflow ``load``
step run it from their flags: once, before any config is trained (see
:mod:`components.train_and_evaluate`)."""
import argparse
from pathlib import Path

import ray

from components.artifacts import DatasetArtifact
from components.load import (
    OwnGraphOptions,
    load_dataset,
    load_own_dataset,
    loaded_dataset,
    loaded_own_dataset,
)
from components.stage_cache import stage_cache_root
from components.storage import location
from pipelines.settings import GraphSource
from plnlp_core.datasets import data_root_setting


def load_stage(args: argparse.Namespace, source: GraphSource) -> DatasetArtifact:
    """The ``load`` stage of ``source``: an OGB dataset under ``--data-root``,
    or a graph of one's own read as the ``--split`` and graph flags say. An
    output already in the stage cache is taken here; only a new one takes
    a Ray task."""
    cache = stage_cache_root(args.work_dir).uri
    if source.path is None:
        data_root = location(data_root_setting(args.data_root)).uri
        return loaded_dataset(source.info.name, data_root, cache) \
            or ray.get(load_dataset.remote(source.info.name, data_root, cache))
    features = str(Path(args.node_features).resolve()) if args.node_features else None
    options = OwnGraphOptions(args.split, args.split_seed, args.directed, features,
                              source.info.hits_k)
    path = str(source.path.resolve())
    return loaded_own_dataset(path, options, cache) \
        or ray.get(load_own_dataset.remote(path, options, cache))
