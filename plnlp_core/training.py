"""One optimisation step and one epoch of pairwise ranking (paper Alg. 1)."""
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from plnlp_core.losses import LossFn
from plnlp_core.sampling import NegativeSampler, share_negatives


@dataclass
class PairBatch:
    """The pairs of one step.

    Attributes:
        pos (Tensor): Positive pairs, shape ``[m, 2]``.
        weight (Tensor, optional): Their weights, shape ``[m]``.
        neg (Tensor): The distinct negative pairs, shape ``[m, 2]``.
        share_index (Tensor): Which negatives each positive is ranked
            against, shape ``[m, num_neg]`` (see :func:`share_negatives`).
    """

    pos: Tensor
    weight: Tensor | None
    neg: Tensor
    share_index: Tensor


def draw_batch(
    pos: Tensor, weight: Tensor | None, sampler: NegativeSampler, num_neg: int,
    generator: torch.Generator | None = None,
) -> PairBatch:
    """Draws ``m`` negatives for ``m`` positives and shares them ``num_neg`` ways."""
    neg = sampler(pos, generator)
    index = share_negatives(pos.size(0), num_neg, generator).to(pos.device)
    return PairBatch(pos, weight, neg, index)


def train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor | None, adj: Tensor,
    batch: PairBatch, loss_fn: LossFn, l2: float, world_size: int = 1,
) -> float:
    r"""One step on ``batch``: positives and the distinct negatives are
    scored together in one forward pass, each negative once, then the
    loss ranks every positive above its ``num_neg`` shared negatives,

    .. math::
        \mathcal{L} = \sum_{i=1}^{m} \sum_{t=1}^{K}
        \ell\left(s^+_i, s^-_{\mathrm{index}_{i,t}}\right)
        + \lambda \lVert \theta \rVert_2^2.

    Under DDP each of ``world_size`` workers holds a shard of the global
    batch and gradients are averaged, so the local ranking sum is scaled by
    ``world_size`` and the L2 term is added once overall: the update equals
    one worker's on the whole batch.

    Returns:
        The loss of this worker's shard (unscaled, without L2).
    """
    m = batch.pos.size(0)
    scores = model(x, adj, torch.cat([batch.pos, batch.neg]))
    ranking = loss_fn(scores[:m], scores[m:][batch.share_index], batch.weight)
    loss = ranking * world_size
    if l2 > 0:
        loss = loss + l2 * sum(p.square().sum() for p in model.parameters())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(ranking.detach())


def train_epoch(
    model: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor | None, adj: Tensor,
    positives: Tensor, weights: Tensor | None, sampler: NegativeSampler, loss_fn: LossFn,
    num_neg: int, batch_size: int, l2: float, world_size: int = 1,
    generator: torch.Generator | None = None,
) -> float:
    """One pass over ``positives`` in shuffled batches of ``batch_size``.

    Returns:
        The mean ranking loss per positive pair.
    """
    model.train()
    total = 0.0
    order = torch.randperm(positives.size(0), generator=generator, device=positives.device)
    for index in order.split(batch_size):
        weight = None if weights is None else weights[index]
        batch = draw_batch(positives[index], weight, sampler, num_neg, generator)
        total += train_step(model, optimizer, x, adj, batch, loss_fn, l2, world_size)
    return total / max(positives.size(0), 1)
