"""Training and evaluation speed, and peak memory, of PLNLP on the real ogbl-ddi.

For each preset of ``pipelines/presets/ddi.yaml`` (``smoke``, ``cpu``, ``paper`` by
default) this builds the model, training graph and negative sampler with
:mod:`plnlp_core.experiment` and measures the code path ``fit`` runs:

- **training**: one full epoch through :func:`plnlp_core.training.train_epoch`, or,
  for ``paper`` (and for every preset when ``--batches N`` is given), ``N`` batches
  of :func:`~plnlp_core.training.draw_batch` + :func:`~plnlp_core.training.train_step`
  extrapolated to ``ceil(num_train_edges / batch_size)`` batches. One warm-up batch
  runs first and is not timed. Reported as seconds per epoch, positives per second,
  and training pairs per second, a pair being one (positive, negative) ranked pair,
  i.e. ``positives * num_neg``;
- **evaluation**: one full valid + test pass of :func:`plnlp_core.evaluation.evaluate`;
- **memory**: the process's peak RSS so far (``ru_maxrss``; a running maximum over
  the whole process, so presets are best listed smallest first) and, on CUDA,
  ``torch.cuda.max_memory_allocated`` of that preset alone.

On CUDA timers are read after ``torch.cuda.synchronize``; sampling draws on the device
with a generator of that device, as ``fit`` does.
``--breakdown`` adds a per-phase timing of single batches (sampling, encoder and
predictor forward and backward, optimizer step).

Run from the repository root, e.g.::

    PLNLP_DATA_ROOT=../shared/datasets python benchmarks/bench_ddi.py \
        --presets smoke,cpu --device cpu
    python benchmarks/bench_ddi.py --device cuda --json bench-ddi.json --breakdown
"""
import argparse
import contextlib
import gc
import json
import math
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a clone without installing

from plnlp_core.config import PLNLPConfig  # noqa: E402
from plnlp_core.datasets import DATASETS, LinkSplit, load_ogb, resolve_data_root  # noqa: E402
from plnlp_core.errors import PLNLPError  # noqa: E402
from plnlp_core.evaluation import evaluate  # noqa: E402
from plnlp_core.experiment import build_model, build_sampler, build_training_graph  # noqa: E402
from plnlp_core.sampling import NegativeSampler  # noqa: E402
from plnlp_core.training import StepOptions, draw_batch, train_epoch, train_step  # noqa: E402

PRESETS_FILE = ROOT / "pipelines" / "presets" / "ddi.yaml"
EXTRAPOLATED_BY_DEFAULT = ("paper",)
PHASES = ("sample", "enc_fwd", "pred_fwd", "loss", "pred_bwd", "enc_bwd", "step")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="smoke,cpu,paper",
                        help="comma-separated presets of pipelines/presets/ddi.yaml")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        choices=("cpu", "cuda"), help="default: cuda if available")
    parser.add_argument("--data-root", help="folder holding ogbl_ddi "
                                            "(default: $PLNLP_DATA_ROOT, else ./data)")
    parser.add_argument("--batches", type=int,
                        help="time N batches and extrapolate to an epoch, for every preset "
                             "(default: 3 for paper, a full epoch for the others)")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the phases of single batches")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.batches is not None and args.batches < 1:
        parser.error(f"--batches must be at least 1, got {args.batches}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    return args


def load_presets(names: list[str]) -> dict[str, PLNLPConfig]:
    """The validated configs of ``names`` from ``pipelines/presets/ddi.yaml``."""
    presets = yaml.safe_load(PRESETS_FILE.read_text())
    unknown = [name for name in names if name not in presets]
    if unknown:
        raise PLNLPError(f"unknown preset(s) {', '.join(unknown)}; "
                         f"{PRESETS_FILE.name} has: {', '.join(presets)}.")
    configs = {}
    for name in names:
        configs[name] = PLNLPConfig.from_mapping({**presets[name], "dataset": "ddi"})
        configs[name].validate()
    return configs


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds ``fn`` takes, the device synchronized before and after, and its result."""
    sync(device)
    start = time.perf_counter()
    result = fn()
    sync(device)
    return time.perf_counter() - start, result


def _mark(marks: list[float], device: torch.device) -> None:
    sync(device)
    marks.append(time.perf_counter())


def peak_rss_mib() -> float:
    """The process's peak resident set size so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10  # bytes vs KiB


def bench_preset(
    name: str, config: PLNLPConfig, split: LinkSplit, device: torch.device,
    batches: int | None, breakdown: bool,
) -> dict[str, object]:
    """Times training, evaluation and memory of one preset (see the module docstring)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    torch.manual_seed(config.seed)
    graph = build_training_graph(split, config).to(device)
    model = build_model(config, split.info, split.num_nodes).to(device)
    x = None if split.x is None else split.x.to(device)
    adj, positives, weights = graph.adj, graph.positives, graph.weights
    sampler = build_sampler(config, split, graph, device)
    options = StepOptions.from_config(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator(device).manual_seed(config.seed)
    num_pos, batch_size = positives.size(0), config.batch_size
    epoch_batches = math.ceil(num_pos / batch_size)

    def step(index: torch.Tensor) -> float:
        weight = None if weights is None else weights[index]
        batch = draw_batch(positives[index], weight, sampler, config.num_neg,
                           config.negatives, generator)
        return train_step(model, optimizer, x, adj, batch, options)

    def shuffled_batches() -> list[torch.Tensor]:
        order = torch.randperm(num_pos, generator=generator, device=device)
        return list(order.split(batch_size))

    model.train()
    step(shuffled_batches()[0])  # warm-up, not timed
    full_epoch = batches is None and name not in EXTRAPOLATED_BY_DEFAULT
    if full_epoch:
        timed_batches = epoch_batches
        epoch_s, _ = timed(device, lambda: train_epoch(
            model, optimizer, x, adj, positives, weights, sampler, options, batch_size,
            generator))
    else:
        timed_batches = min(batches or 3, epoch_batches)
        chosen = shuffled_batches()[:timed_batches]
        seconds, _ = timed(device, lambda: [step(index) for index in chosen])
        epoch_s = seconds / timed_batches * epoch_batches

    phases = time_phases(model, optimizer, x, adj, positives, weights, sampler, options,
                         config, generator, device, batches or 3) if breakdown else None
    eval_splits = {"valid": (split.valid_pos, split.valid_neg),
                   "test": (split.test_pos, split.test_neg)}
    eval_s, _ = timed(device, lambda: evaluate(model, split.info, x, adj, eval_splits,
                                               config.eval_batch_size))
    result = {
        "preset": name,
        "sizes": f"{config.embedding_dim}/{config.hidden_channels}/{config.predictor_hidden}",
        "batch_size": batch_size, "num_neg": config.num_neg,
        "train_positives": num_pos, "epoch_batches": epoch_batches,
        "timed_batches": timed_batches, "extrapolated": not full_epoch,
        "epoch_s": epoch_s,
        "positives_per_s": num_pos / epoch_s,
        "pairs_per_s": num_pos * config.num_neg / epoch_s,
        "eval_s": eval_s,
        "peak_rss_mib": peak_rss_mib(),
        "cuda_peak_mib": (torch.cuda.max_memory_allocated(device) / 2**20
                          if device.type == "cuda" else None),
        "phases_ms": phases,
    }
    return result


def time_phases(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor | None,
    adj: torch.Tensor, positives: torch.Tensor, weights: torch.Tensor | None,
    sampler: NegativeSampler, options: StepOptions, config: PLNLPConfig,
    generator: torch.Generator | None, device: torch.device, reps: int,
) -> dict[str, float]:
    """Mean milliseconds per phase over ``reps`` full-size batches. The step is the
    one :func:`train_step` takes, cut at the node vectors ``h``: the predictor's
    backward stops at a detached copy of ``h`` and the encoder's continues from its
    gradient, so the parameters get the same gradients (the L2 term is left out)."""
    totals = dict.fromkeys(PHASES, 0.0)
    model.train()
    for _ in range(reps):
        order = torch.randperm(positives.size(0), generator=generator, device=device)
        index = order[:config.batch_size]
        index = index.to(device)
        marks: list[float] = []
        _mark(marks, device)
        weight = None if weights is None else weights[index]
        batch = draw_batch(positives[index], weight, sampler, config.num_neg,
                           config.negatives, generator)
        _mark(marks, device)
        optimizer.zero_grad(set_to_none=True)
        h = model.encode(x, adj)
        h_cut = h.detach().requires_grad_()
        _mark(marks, device)
        scores = model.score(h_cut, torch.cat([batch.pos, batch.neg]))
        _mark(marks, device)
        m = batch.pos.size(0)
        loss = options.loss_fn(scores[:m], scores[m:][batch.neg_index], batch.weight)
        _mark(marks, device)
        loss.backward()
        _mark(marks, device)
        h.backward(h_cut.grad)
        if options.clip_grad_norm is not None:
            model.clip_gradients(options.clip_grad_norm)
        _mark(marks, device)
        optimizer.step()
        _mark(marks, device)
        for phase, begin, end in zip(PHASES, marks[:-1], marks[1:], strict=True):
            totals[phase] += (end - begin) * 1000 / reps
    return totals


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def format_table(rows: list[dict[str, object]]) -> str:
    """One aligned line per preset."""
    header = ["preset", "emb/hid/pred", "batch", "timed", "s/epoch", "pairs/s", "pos/s",
              "eval s", "peak RSS MiB", "CUDA peak MiB"]
    lines = [header]
    for row in rows:
        timed_text = (f"{row['timed_batches']}/{row['epoch_batches']} b"
                      if row["extrapolated"] else "epoch")
        cuda = row["cuda_peak_mib"]
        lines.append([
            row["preset"], row["sizes"], str(row["batch_size"]), timed_text,
            f"{row['epoch_s']:.2f}", f"{row['pairs_per_s']:,.0f}",
            f"{row['positives_per_s']:,.0f}", f"{row['eval_s']:.2f}",
            f"{row['peak_rss_mib']:,.0f}", "-" if cuda is None else f"{cuda:,.0f}",
        ])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)


def format_phases(rows: list[dict[str, object]]) -> str:
    """Milliseconds per phase of one batch, one line per preset."""
    lines = [["preset", *PHASES, "total"]]
    for row in rows:
        phases = row["phases_ms"]
        lines.append([row["preset"], *(f"{phases[p]:.1f}" for p in PHASES),
                      f"{sum(phases.values()):.1f}"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                               for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
                     for line in lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    info = DATASETS.get("ddi")
    try:
        configs = load_presets([name.strip() for name in args.presets.split(",") if name.strip()])
        with contextlib.redirect_stdout(sys.stderr):  # OGB's progress lines stay off the table
            load_s, split = timed(torch.device("cpu"), lambda: load_ogb(
                info, resolve_data_root(args.data_root)))
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    header = {
        "device": f"{device.type} ({device_name(device)})",
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "dataset": f"{info.ogb_name}: {split.num_nodes} nodes, "
                   f"{split.train_pos.size(0)} training edges (load {load_s:.1f} s, "
                   f"RSS {peak_rss_mib():,.0f} MiB)",
    }
    for key, value in header.items():
        print(f"{key:8} {value}", flush=True)
    rows = []
    for name, config in configs.items():
        rows.append(bench_preset(name, config, split, device, args.batches, args.breakdown))
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
        print(f"  done {name}: {rows[-1]['epoch_s']:.2f} s/epoch", file=sys.stderr, flush=True)
    print(format_table(rows))
    if args.breakdown:
        print("\nms per batch, by phase (mean of single full-size batches)")
        print(format_phases(rows))
    if args.json is not None:
        args.json.write_text(json.dumps({**header, "presets": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
