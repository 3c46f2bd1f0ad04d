"""How fast random walks are drawn and their pairs written to and read
from Parquet, as the pipeline's augment stage does."""
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import torch
from timing import timed

from components.storage.parquet_io import pairs_table
from plnlp_core.assembly import build_training_graph
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.random_walk import random_walk_pairs, walk_starts


def time_walks_and_parquet(split: LinkSplit, quick: bool) -> dict:
    """Random-walk steps per second from both ends of every training edge
    (length 3 with ``quick``, else 10), and Parquet MB/s of the pairs."""
    config = PLNLPConfig(walk_length=3 if quick else 10, walk_starts="edge_endpoints")
    adj = build_training_graph(split, config).adj
    starts = walk_starts(config.walk_starts, split.num_nodes, split.train_pos)
    seconds, (pairs, weights) = timed(lambda: random_walk_pairs(
        adj, starts, config.walk_length, torch.Generator().manual_seed(0)))
    table = pairs_table(pairs, weight=weights)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "walks.parquet"
        write_s, _ = timed(lambda: pq.write_table(table, path))
        read_s, _ = timed(lambda: pq.read_table(path))
    mb = table.nbytes / 1e6
    return {"walk_steps_per_s": starts.numel() * config.walk_length / seconds,
            "walk_pairs": pairs.size(0), "parquet_mb": mb,
            "parquet_write_mb_per_s": mb / write_s, "parquet_read_mb_per_s": mb / read_s}
