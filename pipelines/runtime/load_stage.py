"""The ``load`` stage as the main job, a sweep and the Kubeflow ``load``
step run it from their flags: once, before any config is trained (see
:mod:`components.train_and_evaluate`)."""
from collections.abc import Callable, Sequence
from pathlib import Path

import ray
from ray.remote_function import RemoteFunction

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
    return load_stages(source, [graph], roots)[0]


def load_stages(source: GraphSource, graphs: Sequence[GraphFlags],
                roots: StorageRoots) -> list[DatasetArtifact]:
    """:func:`load_stage` of each of ``graphs`` (the splits of ``--runs``
    seeds), the new outputs' tasks submitted together: they share the Ray
    workers that import torch and PyG once, where one task a seed, between
    trainings, started a new worker each."""
    entries = [_entry(source, graph, roots) for graph in graphs]
    found = [reuse(*arguments) for reuse, _, arguments in entries]
    tasks = {index: task.remote(*arguments)
             for index, ((_, task, arguments), hit) in enumerate(zip(entries, found, strict=True))
             if hit is None}
    built = dict(zip(tasks, ray.get(list(tasks.values())), strict=True))
    return [built[index] if hit is None else hit for index, hit in enumerate(found)]


def _entry(source: GraphSource, graph: GraphFlags, roots: StorageRoots,
           ) -> tuple[Callable[..., DatasetArtifact | None], RemoteFunction, tuple]:
    """How ``graph``'s output is found in the stage cache, the task that
    makes it, and the arguments of both."""
    cache = roots.stages
    if source.info.draws_its_split:
        drawn = DrawnSplit(graph.split_of(source.info), graph.split_seed)
        return (loaded_planetoid_dataset, load_planetoid_dataset,
                (source.info.name, drawn, roots.data, cache))
    if source.path is None:
        return loaded_dataset, load_dataset, (source.info.name, roots.data, cache)
    features = str(Path(graph.node_features).resolve()) if graph.node_features else None
    options = OwnGraphOptions(graph.split_of(source.info), graph.split_seed, graph.directed,
                              features, source.info.hits_k)
    return loaded_own_dataset, load_own_dataset, (str(source.path.resolve()), options, cache)
