from collections.abc import Callable

import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError
from plnlp_core.sampling.local_sampler import LocalSampler

PairScorer = Callable[[Tensor], Tensor]


def check_pool_size(pool_size: int, num_nodes: int) -> None:
    """Refuses a candidate pool the graph cannot fill with distinct nodes."""
    if not 1 <= pool_size < num_nodes:
        raise PLNLPError(
            f"candidate_pool {pool_size} does not fit a graph of {num_nodes} "
            f"nodes; set candidate_pool between 1 and {num_nodes - 1}."
        )


class ModelGuidedSampler(LocalSampler):
    r"""A sampler that picks among ``pool_size`` uniform candidates per
    positive with the help of the model being trained: the positive
    :math:`(v_i, v_j)` keeps its anchor and gets candidates

    .. math::
        \mathcal{C}_i = \{(v_i, v_{k_1}), \dots, (v_i, v_{k_C})\},
        \quad v_{k_c} \sim \mathcal{U}(V), \; (v_i, v_{k_c}) \notin E,

    of which a subclass keeps one (:meth:`choose`). Before each step the
    training loop hands over a scorer, the model as it is then
    (:meth:`observe`). Candidates are never observed edges nor self-loops.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        degree (Tensor): Node degrees in the training graph, shape ``[N]``.
        pool_size (int): Candidates per positive, :math:`C`.
    """

    guided = True

    def __init__(self, edge_set: EdgeSet, degree: Tensor, pool_size: int) -> None:
        check_pool_size(pool_size, edge_set.num_nodes)
        super().__init__(edge_set, degree, 0.0)
        self.pool_size = pool_size
        self.scorer: PairScorer | None = None

    def observe(self, scorer: PairScorer) -> None:
        """Takes the scorer the next draws consult: pairs ``[M, 2]`` to scores ``[M]``."""
        self.scorer = scorer

    def candidate_pool(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        """``pool_size`` valid candidates for each positive, shape ``[C, m, 2]``."""
        m = pos.size(0)
        return super().__call__(pos.repeat(self.pool_size, 1), generator).view(-1, m, 2)

    def choose(self, pool: Tensor, generator: torch.Generator | None) -> Tensor:
        """One candidate of each column of ``pool`` (``[C, m, 2]``), shape ``[m]``."""
        raise NotImplementedError

    def __call__(self, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        if self.scorer is None:
            raise RuntimeError(f"{type(self).__name__} draws only after observe(scorer).")
        pool = self.candidate_pool(pos, generator)
        picked = self.choose(pool, generator)
        return pool[picked, torch.arange(pos.size(0), device=pos.device)]

    def repair(self, neg: Tensor, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``neg`` with the rows that are edges or self-loops drawn again,
        those rows only: a draw here costs a forward pass of the model (and
        a generator step), so the base class's redraw of every row, which
        spares a host synchronisation, would cost more than the wait."""
        bad = self.rejected(neg).nonzero().squeeze(-1)
        if bad.numel() == 0:
            return neg
        neg = neg.clone()
        neg[bad] = self(pos[bad], generator)
        return neg

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_nodes={self.num_nodes}, pool_size={self.pool_size})"
