import torch
from torch import Tensor


def share_negatives(m: int, num_neg: int, generator: torch.Generator | None = None) -> Tensor:
    r"""Negative sample sharing (paper §4.4): the :math:`m` negatives drawn
    for :math:`m` positives are reused through ``num_neg - 1`` random
    permutations, giving :math:`m \cdot` ``num_neg`` pairs from :math:`m`
    draws,

    .. math::
        \mathrm{index}_{:, 0} = (0, \dots, m-1), \quad
        \mathrm{index}_{:, t} = \pi_t(0, \dots, m-1), \; t = 1, \dots, K-1.

    Score the :math:`m` distinct negatives once, then
    ``neg_score[index]`` has shape ``[m, num_neg]``.

    Args:
        m (int): Number of positives (and of distinct negatives).
        num_neg (int): Negatives ranked against each positive, :math:`K`.
        generator (torch.Generator, optional): Source of randomness; the
            index is made on its device.

    Returns:
        A long tensor of shape ``[m, num_neg]`` indexing the negatives.
    """
    device = generator.device if generator is not None else None
    columns = [torch.arange(m, device=device)]
    columns += [torch.randperm(m, generator=generator, device=device) for _ in range(num_neg - 1)]
    return torch.stack(columns, dim=-1)
