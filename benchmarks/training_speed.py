"""How fast a workload trains and evaluates: full-size batches of the step
that :func:`plnlp_core.training.fitting.fit` takes, extrapolated to an epoch, beside
the naive step, the GEMM peak at the predictor's shape and the memory."""
from dataclasses import dataclass, field

import torch
from step_timing import naive_step, step_flops, time_phases
from timing import MIB, PeakMemory, gemm_gflops, timed
from workloads import Workload, preset_config

from plnlp_core.assembly import build_optimizer, build_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.graph import TrainingGraph
from plnlp_core.sampling import NegativeSampler
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import (
    PairBatch,
    StepOptions,
    draw_batch,
    resolve_precision,
    train_step,
)
from plnlp_core.training.experiment import prepare_experiment


@dataclass
class TrainingBench:
    """A workload's experiment on its device, with what each step takes."""

    config: PLNLPConfig
    split: LinkSplit
    graph: TrainingGraph
    model: torch.nn.Module
    x: torch.Tensor | None
    optimizer: torch.optim.Optimizer
    sampler: NegativeSampler
    options: StepOptions
    device: torch.device
    positives: torch.Tensor = field(init=False)
    weights: torch.Tensor | None = field(init=False)
    generator: torch.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.positives, self.weights = self.graph.epoch_positives(1)
        self.generator = torch.Generator(self.device).manual_seed(self.config.seed)

    def batches(self, count: int) -> list[PairBatch]:
        """The first ``count`` batches of a freshly shuffled epoch."""
        order = torch.randperm(self.positives.size(0), generator=self.generator,
                               device=self.device)
        return [draw_batch(self.positives[index],
                           None if self.weights is None else self.weights[index], self.sampler,
                           self.config.num_neg, self.config.negatives, self.generator)
                for index in order.split(self.config.batch_size)[:count]]

    def step(self, batch: PairBatch, naive: bool = False) -> float:
        """One training step on ``batch`` (the naive one with ``naive``)."""
        take = naive_step if naive else train_step
        return take(self.model, self.optimizer, self.x, self.graph.adj, batch, self.options)


def prepare(workload: Workload, split: LinkSplit, device: torch.device) -> TrainingBench:
    """The workload's experiment (:func:`plnlp_core.training.experiment.prepare_experiment`)
    on ``device`` at the precision it resolves to there, in training mode."""
    config = preset_config(workload)
    config = config.replace(precision=resolve_precision(config.precision, device))
    experiment = prepare_experiment(config, split)
    graph, model = experiment.graph.to(device), experiment.model.to(device)
    sampler = build_sampler(config, split, graph, device)
    optimizer = build_optimizer(model, config)
    model.train()
    return TrainingBench(config, split, graph, model,
                         None if split.x is None else split.x.to(device), optimizer, sampler,
                         StepOptions.from_config(config), device)


def time_training(bench: TrainingBench, name: str, count: int, breakdown: bool = False) -> dict:
    """Times ``count`` batches of our step and of the naive one, one
    evaluation, with ``breakdown`` the phases of ``count`` steps, and the
    memory they take; the figures of workload ``name``."""
    with PeakMemory(bench.device) as memory:
        bench.step(bench.batches(1)[0])  # warm-up
        chosen = bench.batches(count)
        ours, _ = timed(lambda: [bench.step(b) for b in chosen], bench.device)
        draw_s, _ = timed(lambda: bench.batches(count), bench.device)
        naive, _ = timed(lambda: [bench.step(b, naive=True) for b in chosen], bench.device)
        eval_s, eval_pairs = time_evaluation(bench)
        bench.model.train()
        phases = time_phases(bench.model, bench.optimizer, bench.x, bench.graph.adj,
                             lambda: bench.batches(1)[0], bench.options, bench.device,
                             count) if breakdown else None
    config, per_batch = bench.config, (ours + draw_s) / len(chosen)
    epoch_batches = -(-bench.positives.size(0) // config.batch_size)
    m = chosen[0].pos.size(0)
    return {
        "workload": name, "train_positives": bench.positives.size(0),
        "batch_size": config.batch_size, "num_neg": config.num_neg,
        "timed_batches": len(chosen), "epoch_batches": epoch_batches,
        "epoch_s": per_batch * epoch_batches,
        "positives_per_s": m / per_batch, "pairs_per_s": m * config.num_neg / per_batch,
        "eval_s": eval_s, "eval_pairs_per_s": eval_pairs / eval_s,
        **flop_figures(bench, m + chosen[0].neg.size(0), ours / len(chosen)),
        "naive_ratio": naive / ours,
        "peak_rss_mib": memory.rss / MIB,
        "cuda_peak_mib": None if memory.cuda is None else memory.cuda / MIB,
        "phases_ms": phases,
    }


def time_evaluation(bench: TrainingBench) -> tuple[float, int]:
    """Seconds of one evaluation of the valid and test pairs, and how many pairs."""
    split = bench.split
    pairs = {"valid": (split.valid_pos, split.valid_neg), "test": (split.test_pos, split.test_neg)}
    seconds, _ = timed(lambda: evaluate(bench.model, split.info, bench.x, bench.graph.adj, pairs,
                                        bench.config.eval_batch_size), bench.device)
    return seconds, sum(pos.size(0) + neg.size(0) for pos, neg in pairs.values())


def flop_figures(bench: TrainingBench, scored: int, step_s: float) -> dict:
    """The step's GFLOP/s (``scored`` pairs in ``step_s`` seconds), and the
    GEMM peak at the predictor's shape in fp32, bf16 and the step's precision."""
    config, node_input = bench.config, bench.model.node_input.out_channels
    flops = step_flops(config, node_input, bench.split.num_nodes,
                       bench.graph.adj.values().numel(), scored)
    c = config.hidden_channels if config.encoder != "none" else node_input
    shape = (scored, c, config.predictor_hidden if "mlp" in config.predictor else c)
    peaks = {"fp32": gemm_gflops(*shape, bench.device),
             "bf16": gemm_gflops(*shape, bench.device, torch.bfloat16)}
    return {"step_gflops": flops / step_s / 1e9, "precision": config.precision,
            "gemm_peak_gflops": peaks["bf16" if config.precision == "bf16" else "fp32"],
            "gemm_peak_gflops_fp32": peaks["fp32"], "gemm_peak_gflops_bf16": peaks["bf16"]}
