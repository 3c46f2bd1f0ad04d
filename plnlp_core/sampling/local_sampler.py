import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.sampling import SAMPLERS
from plnlp_core.sampling.base import NegativeSampler


@SAMPLERS.register("local")
class LocalSampler(NegativeSampler):
    r"""Local negative sampling (paper §4.4): a positive :math:`(v_i, v_j)`
    keeps its anchor :math:`v_i` and gets a new endpoint

    .. math::
        v_k \sim P(k) \propto \deg(v_k)^{\alpha},

    which is uniform for :math:`\alpha = 0`. Every negative keeps the anchor,
    also when negatives are shared (:func:`draw_negatives`).

    Args:
        edge_set (EdgeSet): The training edges to avoid.
        degree (Tensor): Node degrees in the training graph, shape ``[N]``.
        degree_power (float): The exponent :math:`\alpha`. (default: ``0.0``)
    """

    anchored = True

    def __init__(self, edge_set: EdgeSet, degree: Tensor, degree_power: float = 0.0) -> None:
        super().__init__(edge_set)
        self.degree_power = degree_power
        self.probs = None
        if degree_power != 0.0:
            self.probs = degree.double().clamp(min=1).pow(degree_power)

    @classmethod
    def from_graph(cls, edge_set: EdgeSet, degree: Tensor, degree_power: float) -> "LocalSampler":
        return cls(edge_set, degree, degree_power)

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        m = pos.size(0)
        if self.probs is None:
            dst = torch.randint(self.num_nodes, (m,), generator=generator, device=pos.device)
        else:
            probs = self.probs.to(pos.device)
            dst = torch.multinomial(probs, m, replacement=True, generator=generator)
        return torch.stack([pos[:, 0], dst], dim=-1)

    def __repr__(self) -> str:
        return f"LocalSampler(num_nodes={self.num_nodes}, degree_power={self.degree_power})"
