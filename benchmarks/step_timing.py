"""The training step taken apart: its FLOPs counted from the shapes, the
naive step it is measured against, and milliseconds per phase."""
import time
from collections.abc import Callable

import torch
from timing import sync

from plnlp_core.config import PLNLPConfig
from plnlp_core.training.epoch import PairBatch, StepOptions

PHASES = ("sample", "enc_fwd", "pred_fwd", "loss", "pred_bwd", "enc_bwd", "step")


def step_flops(config: PLNLPConfig, node_input: int, num_nodes: int, nnz: int,
               scored: int) -> float:
    """FLOPs of one step counted from the shapes: the encoder over every
    node, the predictor over the ``scored`` pairs; the backward as twice the
    forward."""
    c = config.hidden_channels if config.encoder != "none" else node_input
    return 3 * (encoder_flops(config, node_input, num_nodes, nnz)
                + scored * pair_flops(config, c))


def encoder_flops(config: PLNLPConfig, node_input: int, num_nodes: int, nnz: int) -> float:
    """FLOPs of the encoder's forward over ``num_nodes`` nodes and ``nnz``
    adjacency entries: its linear maps and one aggregation a layer."""
    if config.encoder == "none":
        return 0.0
    linears = 2 if config.encoder == "sage" else 1
    sizes = [node_input] + [config.hidden_channels] * config.encoder_layers
    return sum(linears * 2 * num_nodes * a * b + 2 * nnz * (a if linears == 2 else b)
               for a, b in zip(sizes[:-1], sizes[1:], strict=True))


def pair_flops(config: PLNLPConfig, c: int) -> float:
    """FLOPs of the predictor's forward on one pair of ``c``-wide vectors."""
    if config.predictor in ("mlp", "mlp_concat"):
        width = c * (2 if config.predictor == "mlp_concat" or config.encoder_level == "edge"
                     else 1)
        sizes = [width] + [config.predictor_hidden] * (config.predictor_layers - 1) + [1]
        return c + sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    if config.predictor == "bilinear":
        return 2 * c * c + 2 * c
    return 2 * c


def naive_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor | None,
               adj: torch.Tensor, batch: PairBatch, options: StepOptions) -> float:
    """The step as a plain implementation takes it: every negative is scored
    as often as it is ranked (``m * num_neg`` rows), shared or not."""
    m = batch.pos.size(0)
    ranked = batch.neg[batch.neg_index].reshape(-1, 2)
    scores = model(x, adj, torch.cat([batch.pos, ranked]))
    loss = options.loss_fn(scores[:m], scores[m:].view(m, -1), batch.weight)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def time_phases(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                x: torch.Tensor | None, adj: torch.Tensor, draw: Callable[[], PairBatch],
                options: StepOptions, device: torch.device, reps: int) -> dict[str, float]:
    """Mean milliseconds per phase (:data:`PHASES`) of ``reps`` steps, cut at
    the node vectors ``h``: the predictor's backward stops at a detached copy
    of ``h`` and the encoder's goes on from its gradient, so the gradients
    are those of :func:`plnlp_core.training.train_step` (without the L2
    term)."""
    totals = dict.fromkeys(PHASES, 0.0)
    for _ in range(reps):
        marks = _phase_marks(model, optimizer, x, adj, draw, options, device)
        for phase, begin, end in zip(PHASES, marks[:-1], marks[1:], strict=True):
            totals[phase] += (end - begin) * 1000 / reps
    return totals


def _phase_marks(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 x: torch.Tensor | None, adj: torch.Tensor, draw: Callable[[], PairBatch],
                 options: StepOptions, device: torch.device) -> list[float]:
    """One step, the clock read (``device`` synchronised) between its phases."""
    marks: list[float] = []

    def lap() -> None:
        sync(device)
        marks.append(time.perf_counter())

    lap()
    batch = draw()
    lap()
    optimizer.zero_grad(set_to_none=True)
    h = model.encode(x, adj)
    h_cut = h.detach().requires_grad_()
    lap()
    # the edge level without its target-link removal in this breakdown
    scores = model.score(h_cut, torch.cat([batch.pos, batch.neg]), adj)
    lap()
    m = batch.pos.size(0)
    loss = options.loss_fn(scores[:m], scores[m:][batch.neg_index], batch.weight)
    lap()
    loss.backward()
    lap()
    h.backward(h_cut.grad)
    if options.clip_grad_norm is not None:
        model.clip_gradients(options.clip_grad_norm)
    lap()
    optimizer.step()
    lap()
    return marks
