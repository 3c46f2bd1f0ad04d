"""A training worker's view of the augment stage's walk rounds."""
from pathlib import Path

import pyarrow.parquet as pq
import torch

from components.artifacts import WalkArtifact
from components.storage.parquet_io import pairs_table
from components.training.walk_rounds import ParquetWalkRounds


def write_rounds(directory: Path, rounds: int, rows: int) -> WalkArtifact:
    walks = WalkArtifact(str(directory), rounds * rows, rounds)
    for r in range(rounds):
        folder = walks.round_directory(r)
        folder.mkdir(parents=True)
        pairs = torch.stack([torch.arange(rows), torch.arange(rows) + 1000 * (r + 1)], dim=-1)
        pq.write_table(pairs_table(pairs, weight=torch.full((rows,), 1.0 / (r + 1))),
                       folder / "part-0000.parquet")
    return walks


def test_each_worker_reads_its_own_rows_of_each_round(tmp_path):
    walks = write_rounds(tmp_path / "walks", rounds=3, rows=10)
    shares = [ParquetWalkRounds(walks, rank, 2) for rank in range(2)]
    assert len(shares[0]) == 3
    for r in (0, 2, 1):
        (pairs0, w0), (pairs1, w1) = shares[0][r], shares[1][r]
        assert pairs0[:, 0].tolist() == [0, 2, 4, 6, 8]
        assert pairs1[:, 0].tolist() == [1, 3, 5, 7, 9]
        assert torch.equal(pairs0[:, 1], pairs0[:, 0] + 1000 * (r + 1))
        assert torch.equal(w0, torch.full((5,), 1.0 / (r + 1))) and w1.dtype == torch.float


def test_a_single_round_is_read_once(tmp_path, monkeypatch):
    walks = write_rounds(tmp_path / "walks", rounds=1, rows=4)
    rounds = ParquetWalkRounds(walks)
    reads = []
    real = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: reads.append(a) or real(*a, **k))
    first = rounds[0]
    for _ in range(3):
        assert torch.equal(rounds[0][0], first[0])
    # other tests' readers may still be reading ahead in their threads
    assert [a for a in reads if str(a[0]).startswith(str(tmp_path))] == [
        (walks.round_directory(0),)]
