"""One optimisation step and one epoch of pairwise ranking (paper Alg. 1)."""
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from plnlp_core.assembly import build_loss
from plnlp_core.config import PLNLPConfig
from plnlp_core.errors import PLNLPError
from plnlp_core.losses import LossFn
from plnlp_core.nn.model import unwrap
from plnlp_core.sampling import NegativeSampler, PairScorer, draw_negatives
from plnlp_core.sampling.neighbors import NeighborSampler, SampledSubgraph, sample_pairs
from plnlp_core.sparse_adam import sparse_parameters


@dataclass
class PairBatch:
    """The pairs of one step.

    Attributes:
        pos (Tensor): Positive pairs, shape ``[m, 2]``.
        weight (Tensor, optional): Their weights, shape ``[m]``.
        neg (Tensor): The distinct negative pairs, shape ``[n, 2]``.
        neg_index (Tensor): Which negatives each positive is ranked
            against, shape ``[m, num_neg]`` (see :func:`draw_negatives`).
    """

    pos: Tensor
    weight: Tensor | None
    neg: Tensor
    neg_index: Tensor


@dataclass(frozen=True)
class StepOptions:
    """How a step ranks and updates.

    Attributes:
        loss_fn (LossFn): The ranking loss.
        num_neg (int): Negatives per positive.
        negatives (str): ``"shared"`` or ``"independent"``.
        l2 (float): Weight of the L2 penalty.
        clip_grad_norm (float, optional): Clip the encoder's and the
            predictor's gradients to this norm.
        world_size (int): DDP workers sharing the global batch.
        precision (str): ``"bf16"`` runs the model's forward under bfloat16
            autocast (the loss stays fp32); ``"fp32"`` and ``"tf32"`` do not
            (:func:`set_matmul_precision` sets TF32).
    """

    loss_fn: LossFn
    num_neg: int = 1
    negatives: str = "shared"
    l2: float = 0.0
    clip_grad_norm: float | None = None
    world_size: int = 1
    precision: str = "fp32"

    @classmethod
    def from_config(cls, config: PLNLPConfig, world_size: int = 1) -> "StepOptions":
        """The loss ``config.loss`` names and the step's settings of ``config``."""
        return cls(build_loss(config), config.num_neg, config.negatives, config.l2,
                   config.clip_grad_norm, world_size, config.precision)


@dataclass(frozen=True)
class RankingStats:
    r"""How a step or an epoch ranked.

    Attributes:
        loss (float or Tensor): The ranking loss (without L2): a step's sum
            over its pairs, an epoch's mean per positive.
        score_gap (float or Tensor): The mean margin of positives over their
            negatives, :math:`\frac{1}{mK}\sum_{i,t} s^+_i - s^-_{i,t}`; a
            sampler whose negatives get harder makes it shrink.

    A step's are 0-dim tensors on the model's device, so that the host
    queues the next step while this one runs on a GPU; an epoch's are
    floats, read once at its end.
    """

    loss: float | Tensor
    score_gap: float | Tensor


def draw_batch(
    pos: Tensor, weight: Tensor | None, sampler: NegativeSampler, num_neg: int,
    negatives: str = "shared", generator: torch.Generator | None = None,
) -> PairBatch:
    """Draws the ``num_neg`` negatives of each positive (:func:`draw_negatives`)."""
    drawn = draw_negatives(pos, sampler, num_neg, negatives, generator)
    return PairBatch(pos, weight, drawn.pairs, drawn.index)


def train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor | None,
    adj: Tensor | SampledSubgraph, batch: PairBatch, options: StepOptions,
) -> RankingStats:
    r"""One step on ``batch``: positives and the distinct negatives are
    scored together in one forward pass, each negative once, then the
    loss ranks every positive above its ``num_neg`` negatives,

    .. math::
        \mathcal{L} = \sum_{i=1}^{m} \sum_{t=1}^{K}
        \ell\left(s^+_i, s^-_{\mathrm{index}_{i,t}}\right)
        + \lambda \lVert \theta \rVert_2^2.

    Under DDP each of ``world_size`` workers holds a shard of the global
    batch and gradients are averaged, so the local ranking sum is scaled by
    ``world_size`` and the L2 term is added once overall: the update equals
    one worker's on the whole batch. On a :class:`SampledSubgraph` (``adj``
    when ``fanouts`` is set) the pairs are its local ids and the L2 term
    reads the embedding rows the step encoded, not the whole table (see
    :func:`l2_penalty`). With ``clip_grad_norm`` the encoder's
    and the predictor's gradients are clipped after averaging. With
    ``precision: bf16`` the forward pass runs under bfloat16 autocast and the
    loss in fp32.

    Returns:
        The loss of this worker's shard (unscaled, without L2) and its score
        gap, as tensors not yet read (reading them waits for the step).
    """
    m = batch.pos.size(0)
    with torch.autocast(batch.pos.device.type, dtype=torch.bfloat16,
                        enabled=options.precision == "bf16"):
        scores = model(x, adj, torch.cat([batch.pos, batch.neg]))
    scores = scores.float()
    # index_select: its backward (index_add_) sums in the same order on any
    # number of CPU threads, where indexing's (index_put_) does not
    pos_score = scores[:m]
    neg_score = scores[m:].index_select(0, batch.neg_index.flatten()).view_as(batch.neg_index)
    ranking = options.loss_fn(pos_score, neg_score, batch.weight)
    loss = ranking * options.world_size
    if options.l2 > 0:
        loss = loss + options.l2 * l2_penalty(model, adj)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if options.clip_grad_norm is not None:
        core = unwrap(model)
        core.clip_gradients(options.clip_grad_norm)
    optimizer.step()
    gap = (pos_score.detach().unsqueeze(-1) - neg_score.detach()).mean()
    return RankingStats(ranking.detach(), gap)


def l2_penalty(model: nn.Module, adj: Tensor | SampledSubgraph) -> Tensor:
    r""":math:`\lVert \theta \rVert_2^2` over every parameter; on a sampled
    step, the embedding tables (whose gradients are sparse) count only the
    rows of the step's nodes."""
    tables = sparse_parameters(model)
    sparse = {id(p) for p in tables}
    penalty = sum(p.square().sum() for p in model.parameters() if id(p) not in sparse)
    if isinstance(adj, SampledSubgraph):
        for table in tables:
            rows = nn.functional.embedding(adj.nodes, table, sparse=True)
            penalty = penalty + rows.square().sum()
    return penalty


def train_epoch(
    model: nn.Module, optimizer: torch.optim.Optimizer, x: Tensor | None, adj: Tensor,
    positives: Tensor, weights: Tensor | None, sampler: NegativeSampler, options: StepOptions,
    batch_size: int, generator: torch.Generator | None = None, max_batches: int | None = None,
    neighbors: NeighborSampler | None = None,
) -> RankingStats:
    """One pass over ``positives`` in shuffled batches of ``batch_size``,
    stopping after ``max_batches`` batches when given. A model-guided
    sampler consults the model as it is before each step. With
    ``neighbors`` each step encodes only the sampled neighbourhood of its
    pairs' nodes (:func:`~plnlp_core.sampling.neighbors.sample_pairs`).

    Returns:
        The ranking loss per positive pair trained on and the mean score
        gap over the steps, weighted by their positives, read from the
        device once, after the last step.
    """
    model.train()
    loss = gap = torch.zeros((), device=positives.device)
    seen = 0
    order = torch.randperm(positives.size(0), generator=generator, device=positives.device)
    for index in order.split(batch_size)[:max_batches]:
        weight = None if weights is None else weights[index]
        if sampler.guided:
            sampler.observe(model_scorer(model, x, adj, neighbors, generator))
        batch = draw_batch(positives[index], weight, sampler, options.num_neg,
                           options.negatives, generator)
        step_graph = adj
        if neighbors is not None:
            batch, step_graph = sampled_batch(batch, neighbors, generator)
        stats = train_step(model, optimizer, x, step_graph, batch, options)
        loss = loss + stats.loss
        gap = gap + stats.score_gap * index.numel()
        seen += index.numel()
    loss_sum, gap_sum = torch.stack([loss, gap]).tolist()
    return RankingStats(loss_sum / max(seen, 1), gap_sum / max(seen, 1))


def sampled_batch(
    batch: PairBatch, neighbors: NeighborSampler, generator: torch.Generator | None,
) -> tuple[PairBatch, SampledSubgraph]:
    """``batch`` in the local ids of its nodes' sampled neighbourhood, and
    that neighbourhood."""
    m = batch.pos.size(0)
    subgraph, local = sample_pairs(neighbors, torch.cat([batch.pos, batch.neg]), generator)
    return PairBatch(local[:m], batch.weight, local[m:], batch.neg_index), subgraph


def model_scorer(
    model: nn.Module, x: Tensor | None, adj: Tensor, neighbors: NeighborSampler | None = None,
    generator: torch.Generator | None = None,
) -> PairScorer:
    """Scores pairs with ``model`` as it is now: without gradients and
    without dropout (evaluation mode, restored afterwards); with
    ``neighbors``, on the pairs' sampled neighbourhood, as a step does."""
    core = unwrap(model)

    def score(pairs: Tensor) -> Tensor:
        was_training = core.training
        core.eval()
        with torch.no_grad():
            if neighbors is None:
                scores = core(x, adj, pairs)
            else:
                subgraph, local = sample_pairs(neighbors, pairs, generator)
                scores = core(x, subgraph, local)
        core.train(was_training)
        return scores.float()

    return score


def resolve_precision(precision: str, device: torch.device) -> str:
    """``"auto"`` is ``"bf16"`` on a GPU that computes in bfloat16 (Ampere
    on) and ``"fp32"`` elsewhere; any other precision stays as it is."""
    if precision != "auto":
        return precision
    if device.type == "cuda" and torch.cuda.is_bf16_supported():
        return "bf16"
    return "fp32"


def check_precision(precision: str, device: torch.device) -> None:
    """Refuses ``bf16`` on a GPU that cannot compute in bfloat16 (before
    Ampere), naming the device, before any training."""
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise PLNLPError(f"precision bf16 needs a GPU that computes in bfloat16, and "
                         f"{torch.cuda.get_device_name(device)} does not; set precision=fp32 "
                         "(or tf32 where the GPU has TF32).")


def set_matmul_precision(precision: str) -> None:
    """fp32 matrix products in full fp32 (``"fp32"``, ``"bf16"``) or with
    TF32 tensor cores allowed (``"tf32"``, on GPUs that have them)."""
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
