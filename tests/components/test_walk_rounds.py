"""A training worker's view of the augment stage's walk rounds, and the
rounds the stage writes being the library's own."""
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

from components.artifacts import WalkArtifact
from components.augment import augment
from components.load import load_dataset
from components.storage.location import Location
from components.storage.parquet_io import pairs_table, read_split
from components.train.walk_rounds import ParquetWalkRounds
from plnlp_core.assembly import build_walk_rounds
from plnlp_core.config import PLNLPConfig
from plnlp_core.training.experiment import prepare_experiment


def write_rounds(directory: Path, rounds: int, rows: int) -> WalkArtifact:
    walks = WalkArtifact(Location(directory), rounds * rows, rounds)
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


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [None, 97])
def test_the_augment_stage_writes_the_library_s_walk_rounds_whatever_its_task_count(
        ray_session, standin_root, tmp_path, monkeypatch, chunk_size):
    """A script and a pipeline with the same config and seed train on the
    same walk pairs: the ``augment`` stage's rounds, walked by 3 or 5 Ray
    tasks, equal :func:`build_walk_rounds`'s in process, pair for pair and
    weight for weight, with one chunk of starts or many (97 per chunk)."""
    if chunk_size is not None:
        monkeypatch.setattr("plnlp_core.random_walk.WALK_CHUNK", chunk_size)
    loaded = ray_session.get(load_dataset.remote("ddi", Location(standin_root),
                                                 Location(tmp_path / "d")))
    config = PLNLPConfig(walk_length=4, walk_starts="edge_endpoints", walk_rounds=2, seed=7)
    split = read_split(loaded.directory.local_path())
    library = build_walk_rounds(split, config)
    assert chunk_size is None or split.train_pos.numel() > 3 * chunk_size
    for tasks in (3, 5):
        walks = augment(loaded, config, Location(tmp_path / f"walks-{tasks}"),
                        num_chunks=tasks)
        stage = ParquetWalkRounds(walks)
        assert len(stage) == 2 and walks.num_pairs == sum(p.size(0) for p, _ in library)
        for (pairs, weights), r in zip(library, range(2), strict=True):
            assert torch.equal(stage[r][0], pairs)
            assert torch.equal(stage[r][1], weights)
    assert not torch.equal(library[0][0], library[1][0])
    # and a DDP worker's share is the same rows of either
    worker = prepare_experiment(config, split, None, rank=1, world_size=2)
    share = ParquetWalkRounds(walks, 1, 2)
    assert torch.equal(worker.graph.walks[1][0], share[1][0])
