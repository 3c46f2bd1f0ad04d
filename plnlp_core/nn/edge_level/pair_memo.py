r"""What the edge level keeps of pair sets that are scored again and again
on one graph: evaluation scores the same valid and test pairs on the same
input graph at every epoch, and their common neighbours
:math:`N(i) \cap N(j)` and paths of length 3 do not change between epochs;
only the node vectors :math:`\mathbf{H}` do. So each such set's values are
made once and kept, and each epoch only sums vectors over them.
"""
from collections.abc import Callable

import torch
from torch import Tensor

from plnlp_core.nn.edge_level.bit_rows import free_memory

MEMORY_SHARE = 0.125
"""The share of the free memory (measured when a first value is kept) that
all the values of one memo may hold, besides a copy of each set's pairs;
past it no more are kept, and the pairs are scored as if not remembered."""


class PairMemo:
    """The values kept for the pair sets one graph is asked to remember.

    A graph's :class:`~plnlp_core.nn.edge_level.common_neighbors.AdjacencyLookup`
    holds its memo, so the memo lives exactly as long as the model keeps that
    graph (:meth:`~plnlp_core.nn.model.PLNLPModel.lookup` makes a new lookup,
    with an empty memo, for another graph). A set is known by the values of
    its pairs, compared in full, never by a tensor's identity: no set's
    values ever serve another set or another graph. Nothing is kept for
    pairs that were not remembered (training's, which change at every step).
    """

    def __init__(self) -> None:
        self._sets: dict[tuple[int, ...], list[tuple[Tensor, dict[str, object]]]] = {}
        self._budget: int | None = None
        self.nbytes = 0
        """Bytes the kept values hold."""

    def __len__(self) -> int:
        """How many pair sets are remembered."""
        return sum(len(sets) for sets in self._sets.values())

    def remember(self, pairs: Tensor) -> None:
        """Keeps values for ``pairs`` (``[M, 2]``) from now on."""
        if self._values(pairs) is None:
            self._sets.setdefault(_key(pairs), []).append((pairs.clone(), {}))

    def get(self, pairs: Tensor, name: str, make: Callable[[], object],
            nbytes: Callable[[], int]) -> object | None:
        """The value ``name`` of remembered ``pairs``: the one kept, else
        ``make()``'s, kept when the ``nbytes()`` it takes (an upper bound
        will do) fit the budget. ``None``, and ``make`` not called, when
        ``pairs`` were not remembered or the value does not fit."""
        values = self._values(pairs)
        if values is None:
            return None
        if name not in values:
            size = nbytes()
            if self.nbytes + size > self.budget(pairs.device):
                return None
            values[name] = make()
            self.nbytes += size
        return values[name]

    def budget(self, device: torch.device) -> int:
        """:data:`MEMORY_SHARE` of the free memory when first asked."""
        if self._budget is None:
            self._budget = int(MEMORY_SHARE * free_memory(device))
        return self._budget

    def _values(self, pairs: Tensor) -> dict[str, object] | None:
        for kept, values in self._sets.get(_key(pairs), []):
            if torch.equal(kept, pairs):
                return values
        return None


def _key(pairs: Tensor) -> tuple[int, ...]:
    """A cheap first test of equal pair sets: their size and end pairs."""
    if pairs.size(0) == 0:
        return (0,)
    return (pairs.size(0), *pairs[0].tolist(), *pairs[-1].tolist())

