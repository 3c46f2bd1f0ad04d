"""Stage ``augment``: random-walk positive pairs (paper §4.5) as Parquet,
``walk_rounds`` independent sets walked by Ray tasks in parallel over
chunks of start nodes."""
from pathlib import Path

import pyarrow.parquet as pq
import ray
import torch
from torch import Tensor

from components.artifacts import DatasetArtifact, WalkArtifact, atomic_directory
from components.parquet_io import pairs_table, read_split
from components.scheduling import ANYWHERE
from plnlp_core.config import PLNLPConfig
from plnlp_core.experiment import input_edges
from plnlp_core.graph import build_adjacency
from plnlp_core.random_walk import random_walk_pairs, walk_starts


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def _walk_chunk(
    rowptr: Tensor, col: Tensor, starts: Tensor, walk_length: int, seed: int, part: Path,
) -> int:
    n = rowptr.numel() - 1
    adj = torch.sparse_csr_tensor(rowptr, col, torch.ones(col.numel()), (n, n))
    generator = torch.Generator().manual_seed(seed)
    pairs, weights = random_walk_pairs(adj, starts, walk_length, generator)
    pq.write_table(pairs_table(pairs, weight=weights), part)
    return pairs.size(0)


def augment(dataset: DatasetArtifact, config: PLNLPConfig, out_dir: str,
            num_chunks: int = 8) -> WalkArtifact:
    """Walks ``config.walk_length`` steps from each start node of the graph
    training uses, ``config.walk_rounds`` times, and writes the pairs and
    their ``1/s`` weights, one folder per round."""
    split = read_split(Path(dataset.directory))
    edges, _ = input_edges(split, config)
    adj, _ = build_adjacency(edges, split.num_nodes)
    rowptr, col = ray.put(adj.crow_indices()), ray.put(adj.col_indices())
    starts = walk_starts(config.walk_starts, split.num_nodes, edges)
    layout = WalkArtifact(out_dir, 0, config.walk_rounds)
    with atomic_directory(Path(out_dir)) as scratch:
        tasks = []
        for r in range(config.walk_rounds):
            folder = scratch / layout.round_directory(r).name
            folder.mkdir()
            tasks += [
                _walk_chunk.remote(rowptr, col, chunk, config.walk_length,
                                   _chunk_seed(config.seed, r, i), folder / f"part-{i:04d}.parquet")
                for i, chunk in enumerate(starts.tensor_split(num_chunks))
            ]
        counts = ray.get(tasks)
    return WalkArtifact(out_dir, sum(counts), config.walk_rounds)


def _chunk_seed(seed: int, walk_round: int, chunk: int) -> int:
    return (seed * 1_000_003 + walk_round) * 100_003 + chunk
