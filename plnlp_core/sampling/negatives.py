from dataclasses import dataclass

import torch
from torch import Tensor

from plnlp_core.sampling.base import NegativeSampler
from plnlp_core.sampling.sharing import share_negatives


@dataclass
class Negatives:
    """The negatives of ``m`` positives.

    Attributes:
        pairs (Tensor): The distinct negative pairs, shape ``[n, 2]``; each
            is scored once.
        index (Tensor): Which pairs each positive is ranked against, shape
            ``[m, num_neg]``.
    """

    pairs: Tensor
    index: Tensor


def draw_negatives(
    pos: Tensor, sampler: NegativeSampler, num_neg: int, mode: str,
    generator: torch.Generator | None = None,
) -> Negatives:
    r"""The ``num_neg`` negatives of each of the ``m`` positives ``pos``.

    - ``"independent"`` (the authors' samplers): ``num_neg`` fresh draws per
      positive, :math:`n = m \cdot K`.
    - ``"shared"`` (paper §4.4, negative sample sharing): ``m`` draws, reused
      through ``num_neg - 1`` permutations (:func:`share_negatives`). An
      anchor-free sampler shares whole pairs, so :math:`n = m`; an anchored
      sampler shares the drawn endpoints :math:`v_k` and every positive
      :math:`(v_i, v_j)` keeps its anchor, :math:`(v_i, v_k)`, a shared pair
      that happens to be an edge being drawn again.

    No returned pair is an observed edge or a self-loop.
    """
    m = pos.size(0)
    if mode == "independent":
        pairs = sampler(pos.repeat_interleave(num_neg, dim=0), generator)
        return Negatives(pairs, _rows(m, num_neg, pos.device))
    drawn = sampler(pos, generator)
    index = share_negatives(m, num_neg, generator).to(pos.device)
    if not sampler.anchored:
        return Negatives(drawn, index)
    anchors = pos[:, :1].expand(m, num_neg)
    pairs = torch.stack([anchors, drawn[index, 1]], dim=-1).reshape(-1, 2)
    pairs = sampler.repair(pairs, pos.repeat_interleave(num_neg, dim=0), generator)
    return Negatives(pairs, _rows(m, num_neg, pos.device))


def _rows(m: int, num_neg: int, device: torch.device) -> Tensor:
    return torch.arange(m * num_neg, device=device).view(m, num_neg)
