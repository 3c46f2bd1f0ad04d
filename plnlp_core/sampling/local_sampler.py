import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.sampling.base import NegativeSampler
from plnlp_core.sampling.registry import SAMPLERS


@SAMPLERS.register("local")
class LocalSampler(NegativeSampler):
    r"""Local negative sampling (paper §4.4): a positive :math:`(v_i, v_j)`
    keeps its anchor :math:`v_i` and gets a new endpoint

    .. math::
        v_k \sim P(k) \propto \deg(v_k)^{\alpha},

    which is uniform for :math:`\alpha = 0`. Every negative keeps the anchor,
    also when negatives are shared (:func:`draw_negatives`). A row whose
    proposals were all neighbours of its anchor takes a verified
    non-neighbour of the anchor.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        degree (Tensor): Node degrees in the training graph, shape ``[N]``.
        degree_power (float): The exponent :math:`\alpha`. (default: ``0.0``)
    """

    anchored = True

    def __init__(self, edge_set: EdgeSet, degree: Tensor, degree_power: float = 0.0) -> None:
        super().__init__(edge_set)
        self.degree_power = degree_power
        self.probs = self.cdf = None
        if degree_power != 0.0:
            self.probs = degree.double().clamp(min=1).pow(degree_power)
            self.cdf = (self.probs.cumsum(0) / self.probs.sum()).float()
        self.non_neighbour = self._verified_non_neighbours()

    def rejection_chances(self) -> tuple[Tensor, Tensor]:
        """Per anchor: the weight of its out-neighbours and itself among all
        nodes; anchors come as often as they have edges."""
        src, dst = (part.cpu() for part in self.edge_set.endpoints())
        weight = torch.ones(self.num_nodes, dtype=torch.double) if self.probs is None \
            else self.probs.cpu()
        taken = weight.clone().index_add_(0, src, weight[dst])
        rows = torch.bincount(src, minlength=self.num_nodes).double()
        return (taken / weight.sum()).clamp(max=1.0), rows

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        m = pos.size(0)
        if self.cdf is None:
            dst = torch.randint(self.num_nodes, (m,), generator=generator, device=pos.device)
        else:  # inverse transform sampling from the degree distribution
            self.cdf = self.cdf.to(pos.device)
            u = torch.rand(m, generator=generator, device=pos.device)
            dst = torch.searchsorted(self.cdf, u).clamp(max=self.num_nodes - 1)
        return torch.stack([pos[:, 0], dst], dim=-1)

    def fallback(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        self.non_neighbour = self.non_neighbour.to(pos.device)
        return torch.stack([pos[:, 0], self.non_neighbour[pos[:, 0]]], dim=-1)

    def _verified_non_neighbours(self, rounds: int = 64) -> Tensor:
        """One non-neighbour per node: random draws, then, for the few nodes
        they missed, every node in turn."""
        n, device = self.num_nodes, self.edge_set.device
        found = torch.full((n,), -1, dtype=torch.long)
        generator = torch.Generator().manual_seed(0)
        nodes = torch.arange(n)
        for _ in range(rounds):
            missing = nodes[found < 0]
            if missing.numel() == 0:
                return found
            pairs = torch.stack([missing, torch.randint(n, (missing.numel(),),
                                                        generator=generator)], dim=-1)
            ok = ~self.rejected(pairs.to(device)).cpu()
            found[missing[ok]] = pairs[ok, 1]
        for node in nodes[found < 0].tolist():
            pairs = torch.stack([torch.full((n,), node), nodes], dim=-1)
            free = (~self.rejected(pairs.to(device)).cpu()).nonzero()
            if free.numel() == 0:
                raise self._no_non_edge(f"for node {node}, which is linked to every other node")
            found[node] = int(free[0])
        return found

    def __repr__(self) -> str:
        return (f"LocalSampler(num_nodes={self.num_nodes}, degree_power={self.degree_power}, "
                f"candidates={self.candidates})")
