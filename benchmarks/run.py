"""The benchmark: how fast PLNLP trains, evaluates, walks and writes, and
what the Ray pipeline adds, in one command.

    python benchmarks/run.py [--quick] [--device cpu|cuda] [--json FILE]

For each workload (ogbl-ddi's ``smoke``, ``cpu`` and ``paper`` presets on the
real ddi; collab's ``paper`` preset with random walks and ppa's ``paper``
preset on stand-ins in OGB's layout, at their real sizes, or small ones with
``--quick``; the edge level, ``encoder_level: edge``, as ddi's ``cpu``
preset at the edge level and ppa's ``ene`` preset) it builds what
:func:`plnlp_core.fitting.fit` builds and times full-size batches of its
step, extrapolated to an epoch:

- seconds per epoch, ranked pairs (positive x negative) and positives per
  second, and evaluation pairs scored per second;
- the step's GFLOP/s, counted from the shapes (forward plus twice it for the
  backward), beside the peak of a dense matrix product at the predictor's
  shape measured in the same process, and their ratio;
- the same step done naively, every negative scored as often as it is
  ranked, as a plain implementation does, and our speed over it;
- peak memory: the resident set size (and on CUDA the allocator's peak).

Then the classic heuristics' seconds and memory on the ppa stand-in,
random-walk steps per second and Parquet write and read MB/s, and,
where Ray and MLflow are installed, the pipeline's overhead on short
epochs: the median wall time between epochs through ``pipelines/run.py``
over ``fit``'s in this process (goal: at most 1.10), and the seconds from
the command to the first epoch, phase by phase (see
:mod:`components.startup`). Only torch, torch-geometric, ogb and pyarrow are needed
for the rest, so it runs on a GPU machine without Ray or MLflow.
"""
import argparse
import contextlib
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import torch

from components.startup import describe_startup
from pipelines.settings import load_preset
from plnlp_core.assembly import (
    build_optimizer,
    build_sampler,
    build_step_options,
    build_training_graph,
)
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS, LinkSplit, resolve_data_root
from plnlp_core.errors import PLNLPError
from plnlp_core.evaluation import evaluate
from plnlp_core.experiment import prepare_experiment, run_experiment
from plnlp_core.heuristics import HEURISTICS, heuristic_metrics
from plnlp_core.ogb_reader import load_ogb
from plnlp_core.random_walk import random_walk_pairs, walk_starts
from plnlp_core.standins import cached_standin, standin_size
from plnlp_core.training import StepOptions, draw_batch, resolve_precision, train_step

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20


@dataclass
class Workload:
    """One dataset and preset to time, and how many batches."""

    name: str
    dataset: str
    preset: str
    source: str  # "real" (the data root), or a stand-in size: "real-size", "tiny", or a scale
    batches: int
    overrides: dict = field(default_factory=dict)


def workloads(quick: bool) -> list[Workload]:
    if quick:
        return [
            Workload("ddi smoke", "ddi", "smoke", "real", 2),
            Workload("ddi cpu", "ddi", "cpu", "real", 2),
            Workload("collab paper, walks", "collab", "paper", "tiny", 2,
                     {"walk_rounds": 1, "batch_size": 256}),
            Workload("ppa paper", "ppa", "paper", "0.002", 2, {"batch_size": 4096}),
            Workload("ddi cpu, edge level", "ddi", "cpu", "real", 2, {"encoder_level": "edge"}),
            Workload("ppa ene (edge level)", "ppa", "ene", "0.002", 2, {"batch_size": 4096}),
        ]
    return [
        Workload("ddi smoke", "ddi", "smoke", "real", 17),
        Workload("ddi cpu", "ddi", "cpu", "real", 17),
        Workload("ddi paper", "ddi", "paper", "real", 3),
        Workload("collab paper, walks", "collab", "paper", "real-size", 3, {"walk_rounds": 1}),
        Workload("ppa paper", "ppa", "paper", "real-size", 1),
        Workload("ddi cpu, edge level", "ddi", "cpu", "real", 17, {"encoder_level": "edge"}),
        Workload("ppa ene (edge level)", "ppa", "ene", "real-size", 1),
    ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small stand-ins and few batches: a minute, for CI")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        choices=("cpu", "cuda"), help="default: cuda if available")
    parser.add_argument("--data-root", help="folder holding ogbl_ddi "
                                            "(default: $PLNLP_DATA_ROOT, else ./data)")
    parser.add_argument("--skip-pipeline", action="store_true",
                        help="leave out the Ray pipeline's overhead")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the phases of a step: sampling, encoder and predictor "
                             "forward and backward, optimiser")
    parser.add_argument("--workload", action="append",
                        help="time only the training workloads whose name contains this text "
                             "(repeatable, e.g. --workload 'edge level'); leaves out the "
                             "heuristics, walks and pipeline parts")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    return args


# Measuring ---------------------------------------------------------------------

def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds ``fn`` takes, the device synchronised before and after."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - start, result


class PeakMemory:
    """The peak resident set size while the block runs (sampled from
    ``/proc/self/status``), and on CUDA the allocator's peak."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.rss = 0
        self._stop = threading.Event()

    def __enter__(self) -> "PeakMemory":
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.rss = max(self.rss, _rss())
        self.cuda = (torch.cuda.max_memory_allocated(self.device)
                     if self.device.type == "cuda" else None)

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.rss = max(self.rss, _rss())


def _rss() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def gemm_gflops(rows: int, inner: int, cols: int, device: torch.device,
                dtype: torch.dtype = torch.float32) -> float:
    """The best GFLOP/s of ``[rows, inner] @ [inner, cols]`` in ``dtype`` here."""
    a = torch.randn(rows, inner, device=device, dtype=dtype)
    b = torch.randn(inner, cols, device=device, dtype=dtype)
    a @ b
    best = min(timed(device, lambda: a @ b)[0] for _ in range(3))
    return 2 * rows * inner * cols / best / 1e9


# The step ----------------------------------------------------------------------

def step_flops(config: PLNLPConfig, node_input: int, num_nodes: int, nnz: int,
               scored: int) -> float:
    """FLOPs of one step counted from the shapes: the encoder over every
    node, the predictor over the ``scored`` pairs; the backward as twice the
    forward."""
    encoder = 0.0
    if config.encoder != "none":
        sizes = [node_input] + [config.hidden_channels] * config.encoder_layers
        for a, b in zip(sizes[:-1], sizes[1:], strict=True):
            linears = 2 if config.encoder == "sage" else 1
            encoder += linears * 2 * num_nodes * a * b + 2 * nnz * (a if linears == 2 else b)
    c = config.hidden_channels if config.encoder != "none" else node_input
    if config.predictor in ("mlp", "mlp_concat"):
        width = c * (2 if config.predictor == "mlp_concat" or config.encoder_level == "edge"
                     else 1)
        sizes = [width] + [config.predictor_hidden] * (config.predictor_layers - 1) + [1]
        per_pair = c + sum(2 * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True))
    elif config.predictor == "bilinear":
        per_pair = 2 * c * c + 2 * c
    else:
        per_pair = 2 * c
    return 3 * (encoder + scored * per_pair)


def naive_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor | None,
               adj: torch.Tensor, batch: object, options: StepOptions) -> float:
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


def data_root(workload: Workload, args: argparse.Namespace) -> Path:
    if workload.source == "real":
        return resolve_data_root(args.data_root)
    if workload.source in ("tiny", "real-size"):
        return cached_standin(workload.dataset, workload.source.replace("real-size", "real"))
    return cached_standin(workload.dataset, standin_size(workload.dataset, "real",
                                                         float(workload.source)))


def preset_config(workload: Workload) -> PLNLPConfig:
    config = PLNLPConfig.from_mapping({**load_preset(workload.dataset, workload.preset),
                                       **workload.overrides, "dataset": workload.dataset})
    config.validate()
    return config


PHASES = ("sample", "enc_fwd", "pred_fwd", "loss", "pred_bwd", "enc_bwd", "step")


def time_phases(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                x: torch.Tensor | None, adj: torch.Tensor, draw: Callable[[], object],
                options: StepOptions, device: torch.device, reps: int) -> dict[str, float]:
    """Mean milliseconds per phase of ``reps`` steps, cut at the node vectors
    ``h``: the predictor's backward stops at a detached copy of ``h`` and the
    encoder's goes on from its gradient, so the gradients are those of
    :func:`train_step` (without the L2 term)."""
    totals = dict.fromkeys(PHASES, 0.0)
    marks: list[float] = []

    def lap() -> None:
        sync(device)
        marks.append(time.perf_counter())

    for _ in range(reps):
        marks.clear()
        lap()
        batch = draw()
        lap()
        optimizer.zero_grad(set_to_none=True)
        h = model.encode(x, adj)
        h_cut = h.detach().requires_grad_()
        lap()
        scores = model.score(h_cut, torch.cat([batch.pos, batch.neg]), adj)  # edge level: no
        # target-link removal in this breakdown
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
        for phase, begin, end in zip(PHASES, marks[:-1], marks[1:], strict=True):
            totals[phase] += (end - begin) * 1000 / reps
    return totals


def bench_training(workload: Workload, split: LinkSplit, device: torch.device,
                   breakdown: bool = False) -> dict:
    """Times ``workload.batches`` batches of our step and of the naive one,
    one evaluation, and the memory they take."""
    config = preset_config(workload)
    config = config.replace(precision=resolve_precision(config.precision, device))
    experiment = prepare_experiment(config, split)
    graph, model = experiment.graph.to(device), experiment.model.to(device)
    x = None if split.x is None else split.x.to(device)
    positives, weights = graph.epoch_positives(1)
    sampler = build_sampler(config, split, graph, device)
    options = build_step_options(config)
    optimizer = build_optimizer(model, config)
    generator = torch.Generator(device).manual_seed(config.seed)
    model.train()

    def batches(count: int) -> list:
        order = torch.randperm(positives.size(0), generator=generator, device=device)
        return [draw_batch(positives[index], None if weights is None else weights[index],
                           sampler, config.num_neg, config.negatives, generator)
                for index in order.split(config.batch_size)[:count]]

    with PeakMemory(device) as memory:
        train_step(model, optimizer, x, graph.adj, batches(1)[0], options)  # warm-up
        chosen = batches(workload.batches)
        ours, _ = timed(device, lambda: [train_step(model, optimizer, x, graph.adj, b, options)
                                         for b in chosen])
        draw_s, _ = timed(device, lambda: batches(workload.batches))
        naive, _ = timed(device, lambda: [naive_step(model, optimizer, x, graph.adj, b, options)
                                          for b in chosen])
        eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                       "test": (split.test_pos, split.test_neg)}
        eval_s, _ = timed(device, lambda: evaluate(model, split.info, x, graph.adj, eval_splits,
                                                   config.eval_batch_size))
        model.train()
        phases = time_phases(model, optimizer, x, graph.adj, lambda: batches(1)[0], options,
                             device, workload.batches) if breakdown else None
    per_batch = (ours + draw_s) / len(chosen)
    epoch_batches = -(-positives.size(0) // config.batch_size)
    m = chosen[0].pos.size(0)
    scored = m + chosen[0].neg.size(0)
    flops = step_flops(config, model.node_input.out_channels, split.num_nodes,
                       graph.adj.values().numel(), scored)
    c = config.hidden_channels if config.encoder != "none" else model.node_input.out_channels
    shape = (scored, c, config.predictor_hidden if "mlp" in config.predictor else c)
    peaks = {"fp32": gemm_gflops(*shape, device),
             "bf16": gemm_gflops(*shape, device, torch.bfloat16)}
    eval_pairs = sum(pos.size(0) + neg.size(0) for pos, neg in eval_splits.values())
    return {
        "workload": workload.name, "train_positives": positives.size(0),
        "batch_size": config.batch_size, "num_neg": config.num_neg,
        "timed_batches": len(chosen), "epoch_batches": epoch_batches,
        "epoch_s": per_batch * epoch_batches,
        "positives_per_s": m / per_batch, "pairs_per_s": m * config.num_neg / per_batch,
        "eval_s": eval_s, "eval_pairs_per_s": eval_pairs / eval_s,
        "step_gflops": flops / (ours / len(chosen)) / 1e9, "precision": config.precision,
        "gemm_peak_gflops": peaks["bf16" if config.precision == "bf16" else "fp32"],
        "gemm_peak_gflops_fp32": peaks["fp32"], "gemm_peak_gflops_bf16": peaks["bf16"],
        "naive_ratio": naive / ours,
        "peak_rss_mib": memory.rss / MIB,
        "cuda_peak_mib": None if memory.cuda is None else memory.cuda / MIB,
        "phases_ms": phases,
    }


# Walks and Parquet ---------------------------------------------------------------

def bench_walks_and_parquet(split: LinkSplit, quick: bool) -> dict:
    """Random-walk steps per second from both ends of every training edge
    (length 3 with ``--quick``, else 10), and Parquet MB/s of the pairs."""
    from components.parquet_io import pairs_table

    config = PLNLPConfig(walk_length=3 if quick else 10, walk_starts="edge_endpoints")
    graph = build_training_graph(split, config)
    starts = walk_starts(config.walk_starts, split.num_nodes, split.train_pos)
    seconds, (pairs, weights) = timed(torch.device("cpu"), lambda: random_walk_pairs(
        graph.adj, starts, config.walk_length, torch.Generator().manual_seed(0)))
    table = pairs_table(pairs, weight=weights)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "walks.parquet"
        write_s, _ = timed(torch.device("cpu"), lambda: pq.write_table(table, path))
        read_s, _ = timed(torch.device("cpu"), lambda: pq.read_table(path))
    mb = table.nbytes / 1e6
    return {"walk_steps_per_s": starts.numel() * config.walk_length / seconds,
            "walk_pairs": pairs.size(0), "parquet_mb": mb,
            "parquet_write_mb_per_s": mb / write_s, "parquet_read_mb_per_s": mb / read_s}


# Heuristics ------------------------------------------------------------------------

def bench_heuristics(split: LinkSplit, name: str) -> dict:
    """Seconds and peak memory of scoring ``split``'s valid and test pairs with
    each classic heuristic (common neighbours, Adamic-Adar, resource allocation)."""
    rows = []
    for heuristic in HEURISTICS.names:
        with PeakMemory(torch.device("cpu")) as memory:
            seconds, metrics = timed(torch.device("cpu"),
                                     lambda h=heuristic: heuristic_metrics(h, split))
        pairs = sum(getattr(split, part).size(0)
                    for part in ("valid_pos", "valid_neg", "test_pos", "test_neg"))
        main = f"test_{split.info.main_metric_key}"
        rows.append({"graph": name, "heuristic": heuristic, "seconds": seconds,
                     "pairs_per_s": pairs / seconds, "peak_rss_mib": memory.rss / MIB,
                     main: metrics[main]})
    return {"graph": name, "rows": rows}


# The pipeline ----------------------------------------------------------------------

def bench_pipeline(args: argparse.Namespace, split: LinkSplit) -> dict | None:
    """What the Ray pipeline adds to :func:`fit`, on short epochs (ddi
    ``smoke`` with two batches an epoch, evaluated every epoch), where a
    fixed cost per epoch shows: the median wall time between epochs as
    MLflow logged them through ``pipelines/run.py`` over the median between
    epochs of ``fit`` in this process; then, from a fresh command with the
    stage cache warm, the seconds to the first epoch, phase by phase."""
    try:
        import mlflow
        import ray
    except ImportError:
        return None
    from components.tracking import median_epoch_interval
    from pipelines.run import main as run_pipeline

    epochs = 30  # fewer would let the controller's first MLflow writes sway the median
    workload = Workload("ddi smoke, 2 batches", "ddi", "smoke", "real", 0,
                        {"epochs": epochs, "max_batches_per_epoch": 2})
    config = preset_config(workload)
    threads = torch.get_num_threads()
    fit_s = median_fit_epoch(config, split)
    with tempfile.TemporaryDirectory() as folder:
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder}/mlflow.db"
        ray.init(address="local", num_cpus=max(threads, 1), include_dashboard=False,
                 log_to_driver=False)
        argv = ["--dataset", "ddi", "--preset", "smoke", "--set", f"epochs={epochs}",
                "--set", "max_batches_per_epoch=2",
                "--data-root", str(resolve_data_root(args.data_root)),
                "--cpus-per-worker", str(threads), "--experiment", "benchmark"]
        with contextlib.redirect_stdout(sys.stderr):
            code = run_pipeline(argv)
        ray.shutdown()
        if code != 0:
            raise PLNLPError(f"the pipeline run of the benchmark failed (exit {code}).")
        client = mlflow.MlflowClient()
        run = client.search_runs([client.get_experiment_by_name("benchmark").experiment_id])[0]
        pipeline_s = median_epoch_interval(client, run.info.run_id)
        startup = startup_phases_of_a_command(args, Path(folder), threads)
    return {"config": f"ddi smoke, 2 batches an epoch, evaluated every epoch, {epochs} epochs, "
                      f"1 worker x {threads} CPUs",
            "fit_median_epoch_s": fit_s, "pipeline_median_epoch_s": pipeline_s,
            "overhead_ratio": pipeline_s / fit_s, "startup": startup}


def median_fit_epoch(config: PLNLPConfig, split: LinkSplit) -> float:
    """The median wall time between the ends of ``fit``'s epochs, evaluation included."""
    from components.tracking import median_interval  # MLflow's module: the pipeline part only

    ends: list[float] = []
    run_experiment(prepare_experiment(config, split),
                   on_epoch=lambda result: ends.append(time.perf_counter()))
    return median_interval(ends)


def startup_phases_of_a_command(args: argparse.Namespace, folder: Path,
                                threads: int) -> dict[str, float]:
    """``startup_*_s`` of ``pipelines/run.py --dataset ddi --preset smoke``
    run as a user runs it (its own local Ray), one epoch, the second of two
    runs so that the stage cache is warm; with ``command_s``, that run's
    wall time, and ``after_last_epoch_s``, the part of it after its last
    epoch ended (the final metrics, the model, Ray's shutdown, the exit)."""
    import mlflow

    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/startup.db",
           "PLNLP_CACHE_DIR": str(folder / "cache")}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, str(ROOT / "pipelines" / "run.py"), "--dataset", "ddi",
               "--preset", "smoke", "--set", "epochs=1", "--experiment", "startup",
               "--data-root", str(resolve_data_root(args.data_root)),
               "--cpus-per-worker", str(threads)]
    for _ in range(2):
        started = time.time()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        ended = time.time()
        if done.returncode != 0:
            raise PLNLPError(f"the benchmark's start-up run failed (exit {done.returncode}): "
                             f"{done.stderr.strip()[-500:]}")
    client = mlflow.MlflowClient(env["MLFLOW_TRACKING_URI"])
    run = client.search_runs([client.get_experiment_by_name("startup").experiment_id],
                             order_by=["attributes.start_time DESC"])[0]
    last_epoch = max(m.timestamp for m in client.get_metric_history(run.info.run_id,
                                                                    "train_loss")) / 1000
    return {**{key: value for key, value in run.data.metrics.items()
               if key.startswith("startup_")},
            "command_s": ended - started, "after_last_epoch_s": ended - last_epoch}


# Output ------------------------------------------------------------------------

def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "cpu"


def format_rows(header: list[str], rows: list[list[str]]) -> str:
    lines = [header, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)


def training_table(rows: list[dict]) -> str:
    """One row a workload; ``% peak`` is of the GEMM peak at its precision."""
    header = ["workload", "precision", "s/epoch", "pairs/s", "pos/s", "eval pairs/s", "GFLOP/s",
              "GEMM fp32", "GEMM bf16", "% peak", "x naive", "peak RSS MiB", "CUDA MiB"]
    return format_rows(header, [[
        r["workload"], r["precision"], f"{r['epoch_s']:.2f}", f"{r['pairs_per_s']:,.0f}",
        f"{r['positives_per_s']:,.0f}", f"{r['eval_pairs_per_s']:,.0f}",
        f"{r['step_gflops']:.1f}", f"{r['gemm_peak_gflops_fp32']:.1f}",
        f"{r['gemm_peak_gflops_bf16']:.1f}",
        f"{100 * r['step_gflops'] / r['gemm_peak_gflops']:.0f}", f"{r['naive_ratio']:.2f}",
        f"{r['peak_rss_mib']:,.0f}",
        "-" if r["cuda_peak_mib"] is None else f"{r['cuda_peak_mib']:,.0f}",
    ] for r in rows])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = torch.device(args.device)
    report: dict = {"device": f"{device.type} ({device_name(device)})", "torch": torch.__version__,
                    "threads": torch.get_num_threads(), "quick": args.quick, "training": []}
    print(f"device   {report['device']}, torch {report['torch']}, {report['threads']} threads")
    splits: dict[str, LinkSplit] = {}
    try:
        chosen = [w for w in workloads(args.quick)
                  if not args.workload or any(text in w.name for text in args.workload)]
        for workload in chosen:
            key = f"{workload.dataset}-{workload.source}"
            if key not in splits:
                with contextlib.redirect_stdout(sys.stderr):
                    splits[key] = load_ogb(DATASETS.get(workload.dataset),
                                           data_root(workload, args))
            report["training"].append(bench_training(workload, splits[key], device,
                                                     args.breakdown))
            print(f"  done {workload.name}", file=sys.stderr, flush=True)
            gc.collect()
        if args.workload:
            print(training_table(report["training"]))
            if args.json is not None:
                args.json.write_text(json.dumps(report, indent=2) + "\n")
            return 0
        ddi = splits["ddi-real"]
        ppa_key = next(key for key in splits if key.startswith("ppa-"))
        report["heuristics"] = bench_heuristics(splits[ppa_key], f"ppa stand-in ({ppa_key[4:]})")
        report["walks"] = bench_walks_and_parquet(ddi, args.quick)
        report["pipeline"] = None if args.skip_pipeline else bench_pipeline(args, ddi)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(training_table(report["training"]))
    if args.breakdown:
        print("\nms per batch, by phase")
        print(format_rows(["workload", *PHASES, "total"], [
            [r["workload"], *(f"{r['phases_ms'][p]:.1f}" for p in PHASES),
             f"{sum(r['phases_ms'].values()):.1f}"] for r in report["training"]]))
    heuristics = report["heuristics"]
    print(f"\nheuristics on the {heuristics['graph']}, valid and test pairs scored")
    print(format_rows(["heuristic", "seconds", "pairs/s", "peak RSS MiB", "test hits@100"], [
        [r["heuristic"], f"{r['seconds']:.1f}", f"{r['pairs_per_s']:,.0f}",
         f"{r['peak_rss_mib']:,.0f}", f"{r['test_hits_100']:.4f}"] for r in heuristics["rows"]]))
    walks = report["walks"]
    print(f"\nrandom walks {walks['walk_steps_per_s'] / 1e6:.1f} M steps/s; Parquet "
          f"{walks['parquet_mb']:.0f} MB written at {walks['parquet_write_mb_per_s']:.0f} MB/s, "
          f"read at {walks['parquet_read_mb_per_s']:.0f} MB/s")
    pipeline = report["pipeline"]
    if pipeline is None:
        print("pipeline overhead: not measured (Ray or MLflow missing, or --skip-pipeline)")
    else:
        print(f"\npipeline ({pipeline['config']}): median epoch "
              f"{pipeline['pipeline_median_epoch_s']:.3f} s through Ray against "
              f"{pipeline['fit_median_epoch_s']:.3f} s in fit, ratio "
              f"{pipeline['overhead_ratio']:.3f}")
        startup = pipeline["startup"]
        print(f"start of `pipelines/run.py --dataset ddi --preset smoke` (stage cache warm): "
              f"{describe_startup(startup)}")
        print(f"the same command with one epoch: {startup['command_s']:.1f} s in all, "
              f"{startup['after_last_epoch_s']:.1f} s of it after its epoch (final metrics, "
              "model, Ray's shutdown, exit)")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
