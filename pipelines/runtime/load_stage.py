"""The ``load`` stage as the main job, a sweep and the Kubeflow ``load``
step run it from their flags: once, before any config is trained (see
:mod:`components.train_and_evaluate`)."""
from pathlib import Path

import ray

from components.artifacts import DatasetArtifact
from components.load import (
    DrawnSplit,
    OwnGraphOptions,
    load_dataset,
    load_own_dataset,
    load_planetoid_dataset,
    loaded_dataset,
    loaded_own_dataset,
    loaded_planetoid_dataset,
)
from pipelines.planning.request import GraphFlags, GraphSource
from pipelines.runtime.storage_roots import StorageRoots


def load_stage(source: GraphSource, graph: GraphFlags, roots: StorageRoots) -> DatasetArtifact:
    """The ``load`` stage of ``source``: an OGB dataset under ``roots.data``,
    a Planetoid graph there split as ``graph`` says, or a graph of one's
    own read as ``graph`` says. An output already in
    the stage cache of ``roots`` is taken here; only a new one takes a
    Ray task."""
    cache = roots.stages
    if source.info.draws_its_split:
        drawn = DrawnSplit(graph.split_of(source.info), graph.split_seed)
        return loaded_planetoid_dataset(source.info.name, drawn, roots.data, cache) \
            or ray.get(load_planetoid_dataset.remote(source.info.name, drawn, roots.data, cache))
    if source.path is None:
        return loaded_dataset(source.info.name, roots.data, cache) \
            or ray.get(load_dataset.remote(source.info.name, roots.data, cache))
    features = str(Path(graph.node_features).resolve()) if graph.node_features else None
    options = OwnGraphOptions(graph.split_of(source.info), graph.split_seed, graph.directed,
                              features, source.info.hits_k)
    path = str(source.path.resolve())
    return loaded_own_dataset(path, options, cache) \
        or ray.get(load_own_dataset.remote(path, options, cache))
