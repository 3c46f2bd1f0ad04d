"""Stage ``augment``: random-walk positive pairs (paper §4.5) as Parquet,
``walk_rounds`` independent sets walked by Ray tasks in parallel, each over
a run of the round's chunks of start nodes. The pairs are those the library
builds in process (:func:`plnlp_core.assembly.build_walk_rounds`): both walk
with :func:`plnlp_core.random_walk.walk_round`, whose chunks are seeded from
the config's seed, the round and the chunk, whatever the task count."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import torch
from torch import Tensor

from components.artifacts import DatasetArtifact, WalkArtifact
from components.scheduling import ANYWHERE
from components.storage.location import Location
from components.storage.manifest import content_digest
from components.storage.parquet_io import pairs_table, read_split
from components.storage.stage_cache import cached, local_entry
from plnlp_core import random_walk
from plnlp_core.assembly import walk_graph
from plnlp_core.config import PLNLPConfig


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def _walk_chunk(
    rowptr: Tensor, col: Tensor, starts: Tensor, walk_length: int, seed: int, walk_round: int,
    chunks: range, chunk_size: int,
) -> pa.Table:
    """The pairs of round ``walk_round``'s chunks ``chunks`` of ``starts``,
    returned to the builder (on a cluster the task may run on a node that
    does not see its folder)."""
    n = rowptr.numel() - 1
    adj = torch.sparse_csr_tensor(rowptr, col, torch.ones(col.numel()), (n, n))
    pairs, weights = random_walk.walk_round(adj, starts, walk_length, seed, walk_round,
                                            chunks, chunk_size)
    return pairs_table(pairs, weight=weights)


def augment(dataset: DatasetArtifact, config: PLNLPConfig, cache_root: Location,
            num_chunks: int = 8) -> WalkArtifact:
    """Walks ``config.walk_length`` steps from each start node of the graph
    training uses, ``config.walk_rounds`` times, and writes the pairs and
    their ``1/s`` weights, one folder per round, into an entry of the stage
    cache at ``cache_root`` (see :mod:`components.storage.stage_cache`), or reuses
    the entry walked on the same splits with the same settings.

    Each round is walked by ``num_chunks`` Ray tasks, each over a run of
    consecutive chunks of :data:`~plnlp_core.random_walk.WALK_CHUNK` start
    nodes and writing one Parquet part (empty when a small graph has fewer
    chunks than tasks); the count changes no pair."""
    chunk_size = random_walk.WALK_CHUNK
    inputs = augment_inputs(dataset, config, chunk_size)
    entry = cached(cache_root, "augment", inputs,
                   lambda scratch: _walk_rounds(dataset, config, num_chunks, chunk_size, scratch))
    return WalkArtifact(entry.location, entry.parquet_rows(), config.walk_rounds)


def augment_inputs(dataset: DatasetArtifact, config: PLNLPConfig, chunk_size: int) -> dict:
    """What the ``augment`` entry is keyed on: the splits' content digest,
    the settings that change the walks, and the chunk size the walks are
    seeded by (the task count changes nothing)."""
    settings = ("walk_length", "walk_starts", "walk_rounds", "seed", "valid_as_input",
                "min_train_year")
    return {"splits": content_digest(dataset.directory), "walk_chunk": chunk_size,
            **{name: getattr(config, name) for name in settings}}


def _walk_rounds(dataset: DatasetArtifact, config: PLNLPConfig, num_chunks: int,
                 chunk_size: int, out: Path) -> None:
    split = read_split(local_entry(dataset.directory))
    adj, starts = walk_graph(split, config)
    rowptr, col = ray.put(adj.crow_indices()), ray.put(adj.col_indices())
    shared_starts = ray.put(starts)
    count = len(random_walk.walk_chunks(starts, chunk_size))
    runs = torch.arange(count).tensor_split(num_chunks)
    layout = WalkArtifact(Location(out), 0, config.walk_rounds)
    parts = {}
    for r in range(config.walk_rounds):
        folder = layout.round_directory(r)
        folder.mkdir()
        for i, run in enumerate(runs):
            chunks = range(int(run[0]), int(run[-1]) + 1) if run.numel() else range(0)
            parts[folder / f"part-{i:04d}.parquet"] = _walk_chunk.remote(
                rowptr, col, shared_starts, config.walk_length, config.seed, r, chunks,
                chunk_size)
    for part, table in parts.items():
        pq.write_table(ray.get(table), part)
