"""Stage ``augment``: random-walk positive pairs (paper §4.5) as Parquet,
``walk_rounds`` independent sets walked by Ray tasks in parallel over
chunks of start nodes."""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import torch
from torch import Tensor

from components.artifacts import DatasetArtifact, WalkArtifact
from components.scheduling import ANYWHERE
from components.storage.parquet_io import pairs_table, read_split
from components.storage.stage_cache import cached, content_digest, local_entry
from plnlp_core.assembly import input_edges
from plnlp_core.config import PLNLPConfig
from plnlp_core.graph import build_adjacency
from plnlp_core.random_walk import random_walk_pairs, walk_starts


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def _walk_chunk(
    rowptr: Tensor, col: Tensor, starts: Tensor, walk_length: int, seed: int,
) -> pa.Table:
    """The pairs of walks from ``starts``, returned to the builder (on a
    cluster the task may run on a node that does not see its folder)."""
    n = rowptr.numel() - 1
    adj = torch.sparse_csr_tensor(rowptr, col, torch.ones(col.numel()), (n, n))
    generator = torch.Generator().manual_seed(seed)
    pairs, weights = random_walk_pairs(adj, starts, walk_length, generator)
    return pairs_table(pairs, weight=weights)


def augment(dataset: DatasetArtifact, config: PLNLPConfig, cache_root: str,
            num_chunks: int = 8) -> WalkArtifact:
    """Walks ``config.walk_length`` steps from each start node of the graph
    training uses, ``config.walk_rounds`` times, and writes the pairs and
    their ``1/s`` weights, one folder per round, into an entry of the stage
    cache at ``cache_root`` (see :mod:`components.storage.stage_cache`), or reuses
    the entry walked on the same splits with the same settings."""
    inputs = augment_inputs(dataset, config, num_chunks)
    entry = cached(cache_root, "augment", inputs,
                   lambda scratch: _walk_rounds(dataset, config, num_chunks, scratch))
    return WalkArtifact(entry.uri, entry.parquet_rows(), config.walk_rounds)


def augment_inputs(dataset: DatasetArtifact, config: PLNLPConfig, num_chunks: int) -> dict:
    """What the ``augment`` entry is keyed on: the splits' content digest,
    the settings that change the walks, and the chunk count."""
    settings = ("walk_length", "walk_starts", "walk_rounds", "seed", "valid_as_input",
                "min_train_year")
    return {"splits": content_digest(dataset.directory), "num_chunks": num_chunks,
            **{name: getattr(config, name) for name in settings}}


def _walk_rounds(dataset: DatasetArtifact, config: PLNLPConfig, num_chunks: int,
                 out: Path) -> None:
    split = read_split(local_entry(dataset.directory))
    edges, _ = input_edges(split, config)
    adj, _ = build_adjacency(edges, split.num_nodes)
    rowptr, col = ray.put(adj.crow_indices()), ray.put(adj.col_indices())
    starts = walk_starts(config.walk_starts, split.num_nodes, edges)
    layout = WalkArtifact(str(out), 0, config.walk_rounds)
    parts = {}
    for r in range(config.walk_rounds):
        folder = layout.round_directory(r)
        folder.mkdir()
        for i, chunk in enumerate(starts.tensor_split(num_chunks)):
            parts[folder / f"part-{i:04d}.parquet"] = _walk_chunk.remote(
                rowptr, col, chunk, config.walk_length, _chunk_seed(config.seed, r, i))
    for part, table in parts.items():
        pq.write_table(ray.get(table), part)


def _chunk_seed(seed: int, walk_round: int, chunk: int) -> int:
    return (seed * 1_000_003 + walk_round) * 100_003 + chunk
