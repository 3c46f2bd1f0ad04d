import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError


class NegativeSampler:
    r"""Draws one negative pair per positive pair by rejection: a candidate
    that is an observed edge or a self-loop is drawn again.

    Subclasses say how candidates are drawn in :meth:`propose`, and whether
    a negative keeps its positive's anchor :math:`v_i` (:attr:`anchored`).

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        max_rounds (int): How many redraws before giving up. (default: ``100``)
    """

    anchored = False

    def __init__(self, edge_set: EdgeSet, max_rounds: int = 100) -> None:
        self.edge_set = edge_set
        self.num_nodes = edge_set.num_nodes
        self.max_rounds = max_rounds

    @classmethod
    def from_graph(
        cls, edge_set: EdgeSet, degree: Tensor, degree_power: float,
    ) -> "NegativeSampler":
        """Builds the sampler from what any sampler may need of the graph."""
        return cls(edge_set)

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        raise NotImplementedError

    def __call__(self, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Returns negatives of shape ``[m, 2]`` for positives ``[m, 2]``."""
        return self.repair(self.propose(pos, generator), pos, generator)

    def repair(self, neg: Tensor, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Redraws, for the positive of the same row, every pair of ``neg``
        that is an observed edge or a self-loop; ``neg`` is changed in place."""
        bad = self._rejected(neg)
        for _ in range(self.max_rounds):
            if not bad.any():
                return neg
            neg[bad] = self.propose(pos[bad], generator)
            bad[bad.clone()] = self._rejected(neg[bad])
        if bad.any():
            raise PLNLPError(
                f"{type(self).__name__} found no non-edge for {int(bad.sum())} pairs "
                f"after {self.max_rounds} draws; the graph is too dense for this sampler."
            )
        return neg

    def _rejected(self, pairs: Tensor) -> Tensor:
        return (pairs[:, 0] == pairs[:, 1]) | self.edge_set.contains(pairs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_nodes={self.num_nodes})"
