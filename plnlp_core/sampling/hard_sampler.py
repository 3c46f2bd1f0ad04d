import torch
from torch import Tensor

from plnlp_core.sampling.model_guided import ModelGuidedSampler
from plnlp_core.sampling.registry import SAMPLERS


@SAMPLERS.register("hard")
class HardSampler(ModelGuidedSampler):
    r"""Hard negative sampling: of the :math:`C` uniform candidates
    :math:`\mathcal{C}_i` of a positive :math:`(v_i, v_j)`, the one the
    current model scores highest,

    .. math::
        (v_i, v_k), \quad k = \operatorname*{arg\,max}_{(v_i, v_c) \in
        \mathcal{C}_i} s_{ic}.

    The simple baseline of the adversarial sampler: no generator, the
    model itself points at its hardest mistakes.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        degree (Tensor): Node degrees in the training graph, shape ``[N]``.
        pool_size (int): Candidates per positive, :math:`C`.
    """

    def choose(self, pool: Tensor, generator: torch.Generator | None) -> Tensor:
        c, m, _ = pool.shape
        return self.scorer(pool.view(-1, 2)).view(c, m).argmax(dim=0)
