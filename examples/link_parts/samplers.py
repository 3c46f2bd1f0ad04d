import torch
from torch import Tensor

from plnlp_core.edge_set import EdgeSet
from plnlp_core.sampling import GlobalSampler


class HeadOrTailSampler(GlobalSampler):
    r"""Negatives that corrupt one end of their positive (Bordes et al.,
    "Translating Embeddings for Modeling Multi-relational Data", 2013), a
    sampler of one's own between the paper's global and local ones (§4.4):
    a positive :math:`(v_i, v_j)` gets

    .. math::
        (v_i, v_k) \text{ with probability } p, \quad (v_k, v_j)
        \text{ otherwise}, \qquad v_k \sim \mathcal{U}(V),

    never an observed edge nor a self-loop; a row whose proposals were all
    edges falls back on :class:`~plnlp_core.sampling.GlobalSampler`'s
    verified non-edges. plnlp builds it as ``HeadOrTailSampler(edge_set,
    **sampler_options)``.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        tail_share (float): The probability :math:`p` of keeping the head.
            (default: ``0.5``)
    """

    def __init__(self, edge_set: EdgeSet, tail_share: float = 0.5) -> None:
        super().__init__(edge_set)
        self.tail_share = tail_share

    def rejection_chances(self) -> tuple[Tensor, Tensor]:
        """Per kept end: its neighbours and itself among all nodes; ends come
        as often as they have edges."""
        src, _ = (part.cpu() for part in self.edge_set.endpoints())
        degree = torch.bincount(src, minlength=self.num_nodes).double()
        return ((degree + 1) / self.num_nodes).clamp(max=1.0), degree

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        m = pos.size(0)
        nodes = torch.randint(self.num_nodes, (m,), generator=generator, device=pos.device)
        keep_head = torch.rand(m, generator=generator, device=pos.device) < self.tail_share
        return torch.where(keep_head.unsqueeze(-1), torch.stack([pos[:, 0], nodes], dim=-1),
                           torch.stack([nodes, pos[:, 1]], dim=-1))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_nodes={self.num_nodes}, "
                f"tail_share={self.tail_share}, candidates={self.candidates})")
