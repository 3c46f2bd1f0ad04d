"""The ``augment`` stage's walk rounds as a training worker reads them."""
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow.parquet as pq
from torch import Tensor

from components.artifacts import WalkArtifact
from components.storage.parquet_io import column, table_pairs


class ParquetWalkRounds:
    """This worker's share of each walk round (rows ``rank::world_size``),
    read from Parquet when training reaches it, with the next round read
    ahead in a thread; a single round is read once.

    Args:
        walks (WalkArtifact): The ``augment`` stage's output.
        rank (int): This worker's rank. (default: ``0``)
        world_size (int): Number of workers. (default: ``1``)
    """

    def __init__(self, walks: WalkArtifact, rank: int = 0, world_size: int = 1) -> None:
        self.walks = walks
        self.rank = rank
        self.world_size = world_size
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="walk-rounds")
        self._ahead: dict[int, Future] = {}

    def __len__(self) -> int:
        return self.walks.rounds

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(index)
        pending = self._ahead.pop(index, None) or self._pool.submit(self._read, index)
        following = (index + 1) % len(self)
        if following not in self._ahead:
            self._ahead[following] = pending if following == index \
                else self._pool.submit(self._read, following)
        return pending.result()

    def _read(self, index: int) -> tuple[Tensor, Tensor]:
        table = pq.read_table(self.walks.round_directory(index))
        share = slice(self.rank, None, self.world_size)
        return (table_pairs(table)[share].contiguous(),
                column(table, "weight")[share].contiguous().float())

    def __repr__(self) -> str:
        return (f"ParquetWalkRounds(rounds={len(self)}, rank={self.rank}, "
                f"world_size={self.world_size})")
