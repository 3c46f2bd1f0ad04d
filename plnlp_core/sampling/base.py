import functools

import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError


class NegativeSampler:
    r"""Draws one negative pair per positive pair that is neither an observed
    edge nor a self-loop, without waiting on the host: each row gets
    ``candidates`` proposals at once and keeps the first valid one, and a row
    whose proposals were all rejected takes a verified non-edge of its own
    (:meth:`fallback`). ``candidates`` is the smallest :math:`K` with

    .. math::
        \mathbb{E}_{\text{rows}}\left[p_r^{K}\right] \le 10^{-4},

    where :math:`p_r` is the chance that one proposal for row :math:`r` is
    rejected, so about one row in :math:`10^4` falls back.

    Subclasses say how proposals are drawn (:meth:`propose`), how likely one
    is rejected (:meth:`rejection_chances`), what a row falls back to
    (:meth:`fallback`), and whether a negative keeps its positive's anchor
    :math:`v_i` (:attr:`anchored`).

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
    """

    anchored = False
    guided = False
    MISS_RATE = 1e-4
    MAX_CANDIDATES = 32

    def __init__(self, edge_set: EdgeSet) -> None:
        self.edge_set = edge_set
        self.num_nodes = edge_set.num_nodes

    def state_dict(self) -> dict:
        """What the sampler learned, for a run that resumes (none here)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Puts back what :meth:`state_dict` returned."""

    @functools.cached_property
    def candidates(self) -> int:
        """Proposals drawn per row (see the class docstring)."""
        chances, rows = self.rejection_chances()
        rows = rows / rows.sum()
        for k in range(1, self.MAX_CANDIDATES):
            if float((rows * chances.pow(k)).sum()) <= self.MISS_RATE:
                return k
        return self.MAX_CANDIDATES

    def rejection_chances(self) -> tuple[Tensor, Tensor]:
        """For each kind of row, the chance that one proposal is rejected,
        and how often such rows come."""
        raise NotImplementedError

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        raise NotImplementedError

    def fallback(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        """A verified non-edge for each row of ``pos``."""
        raise NotImplementedError

    def __call__(self, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Returns negatives of shape ``[m, 2]`` for positives ``[m, 2]``."""
        m, k = pos.size(0), self.candidates
        proposals = self.propose(pos.repeat(k, 1), generator).view(k, m, 2)
        valid = ~self.rejected(proposals.view(-1, 2)).view(k, m)
        first = valid.to(torch.uint8).argmax(dim=0)  # the first valid proposal of each row
        neg = proposals[first, torch.arange(m, device=pos.device)]
        return torch.where(valid.any(dim=0).unsqueeze(-1), neg, self.fallback(pos, generator))

    def repair(self, neg: Tensor, pos: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """``neg`` with every pair that is an observed edge or a self-loop
        drawn again for the positive of its row."""
        return torch.where(self.rejected(neg).unsqueeze(-1), self(pos, generator), neg)

    def rejected(self, pairs: Tensor) -> Tensor:
        """Which pairs are self-loops or observed edges."""
        return (pairs[:, 0] == pairs[:, 1]) | self.edge_set.contains(pairs)

    def _no_non_edge(self, what: str) -> PLNLPError:
        return PLNLPError(f"{type(self).__name__} found no non-edge {what}; the graph is too "
                          "dense for this sampler.")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(num_nodes={self.num_nodes}, candidates={self.candidates})"
