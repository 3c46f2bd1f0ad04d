import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.sampling.base import NegativeSampler
from plnlp_core.sampling.registry import SAMPLERS


@SAMPLERS.register("global")
class GlobalSampler(NegativeSampler):
    r"""Global negative sampling (paper §4.4): pairs drawn uniformly from all
    non-edges,

    .. math::
        (v_a, v_b) \sim \mathcal{U}\left(\{(a, b) : a \ne b,\ (a, b) \notin E\}\right),

    independent of the positive they are ranked against. A row whose
    proposals were all edges takes one of ``pool_size`` verified non-edges.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        pool_size (int): Verified non-edges kept to fall back on. (default: ``1024``)
    """

    def __init__(self, edge_set: EdgeSet, pool_size: int = 1024) -> None:
        super().__init__(edge_set)
        self.pool = self._verified_non_edges(pool_size)

    def rejection_chances(self) -> tuple[Tensor, Tensor]:
        n = self.num_nodes
        return torch.tensor([min((len(self.edge_set) + n) / n**2, 1.0)]), torch.ones(1)

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        return torch.randint(
            self.num_nodes, (pos.size(0), 2), generator=generator, device=pos.device
        )

    def fallback(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        self.pool = self.pool.to(pos.device)
        index = torch.randint(self.pool.size(0), (pos.size(0),), generator=generator,
                              device=pos.device)
        return self.pool[index]

    def _verified_non_edges(self, count: int, rounds: int = 64) -> Tensor:
        """Up to ``count`` distinct non-edges: random draws, or every pair of
        a graph too dense for them (a small one)."""
        found = torch.empty(0, 2, dtype=torch.long)
        generator = torch.Generator().manual_seed(0)
        for _ in range(rounds):
            pairs = torch.randint(self.num_nodes, (4 * count, 2), generator=generator)
            found = torch.unique(torch.cat([found, pairs[~self._rejected_on_cpu(pairs)]]), dim=0)
            if found.size(0) >= count:
                return found[:count]
        if found.size(0) == 0 and self.num_nodes**2 <= 10**8:
            nodes = torch.arange(self.num_nodes)
            pairs = torch.cartesian_prod(nodes, nodes)
            found = pairs[~self._rejected_on_cpu(pairs)][:count]
        if found.size(0) == 0:
            raise self._no_non_edge("among all pairs")
        return found

    def _rejected_on_cpu(self, pairs: Tensor) -> Tensor:
        return self.rejected(pairs.to(self.edge_set.device)).cpu()
