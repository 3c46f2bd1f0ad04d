import torch
from torch import Tensor

from plnlp_core.sampling import SAMPLERS
from plnlp_core.sampling.base import NegativeSampler


@SAMPLERS.register("global")
class GlobalSampler(NegativeSampler):
    r"""Global negative sampling (paper §4.4): pairs drawn uniformly from all
    non-edges,

    .. math::
        (v_a, v_b) \sim \mathcal{U}\left(\{(a, b) : a \ne b,\ (a, b) \notin E\}\right),

    independent of the positive they are ranked against.

    Args:
        edge_set (EdgeSet): The training edges to avoid.
    """

    def propose(self, pos: Tensor, generator: torch.Generator | None) -> Tensor:
        return torch.randint(
            self.num_nodes, (pos.size(0), 2), generator=generator, device=pos.device
        )
