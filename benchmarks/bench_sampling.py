"""Full batch against neighbour-sampled training (``fanouts``) on
power-law graphs of growing size, side by side in one run: seconds per
million training positives and the peak memory of the process that builds
the graph and model and trains, each mode in a process of its own.

    python benchmarks/bench_sampling.py [--edges 1e6,1e7,5e7] [--steps 3]
        [--nodes-per-edge 0.1] [--cap-gib 16]
    python benchmarks/bench_sampling.py --ppa [--steps 3] [--cap-gib 16]

The graphs are a power-law generator's (a node's chance to be an edge's
source falls as its rank to the -0.8, destinations uniform), 0.1 nodes an
edge, 90 % of the edges training positives. The model is the ``sampled``
preset's (pipelines/presets/own.yaml: SAGE 2x64, embedding 64, MLP 2x64,
3 shared global negatives); full batch runs it with ``fanouts: null`` and
batches of 65,536 positives (the ``node`` preset's), sampled with
``fanouts: [15, 10]`` and batches of 2,048. A step's seconds are the median
of ``--steps`` steps after one warm-up; the peak is the process's
resident memory at its highest (the graph's build included), and a step's
memory what the steps after the warm-up added to what the process held
before them (the graph, the model and the optimiser's state). Each mode's process has its data
segment capped at ``--cap-gib`` (``RLIMIT_DATA``), so that a full batch
too large for the machine fails its own allocation rather than wake the
kernel's OOM killer among other processes; a mode that fails to allocate,
or that the kernel kills, is "out of memory".

With ``--ppa`` the graph is the real-size ogbl-ppa stand-in (576,289 nodes,
21.2 M training edges, 58 features a node, cached under
``$PLNLP_CACHE_DIR``) and the model ppa's ``paper`` preset's (SAGE 2x256
over a 256-wide embedding and the features, DOT), both ways.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import torch

from pipelines.planning.presets import load_preset
from plnlp_core.assembly import build_model, build_negative_sampler, build_optimizer
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.edge_set import EdgeSet
from plnlp_core.graph import build_adjacency
from plnlp_core.sampling.neighbors import NeighborSampler
from plnlp_core.training.epoch import StepOptions, draw_batch, sampled_batch, train_step

OUT_OF_MEMORY = ("can't allocate", "MemoryError", "not enough memory", "std::bad_alloc")
MODES = {"full batch": {"fanouts": None, "batch_size": 65536},
         "sampled": {"fanouts": [15, 10], "batch_size": 2048}}


def power_law_edges(num_edges: int, num_nodes: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    weights = torch.arange(1, num_nodes + 1, dtype=torch.float).pow(-0.8)
    src = torch.multinomial(weights, num_edges, replacement=True, generator=generator)
    dst = torch.randint(num_nodes, (num_edges,), generator=generator)
    keep = src != dst
    return torch.stack([src[keep], dst[keep]], dim=1)


class BenchGraph(NamedTuple):
    """What a mode trains on: positives, node count, features, the preset's
    settings and the dataset's description."""

    positives: torch.Tensor
    num_nodes: int
    x: torch.Tensor | None
    preset: dict
    info: DatasetInfo


def power_law_graph(num_edges: int, nodes_per_edge: float) -> BenchGraph:
    """The generator's graph, 90 % of its edges training positives, and the
    own ``sampled`` preset."""
    num_nodes = max(int(num_edges * nodes_per_edge), 100)
    edges = power_law_edges(num_edges, num_nodes)
    return BenchGraph(edges[: int(0.9 * edges.size(0))], num_nodes, None,
                      load_preset("own", "sampled"), DatasetInfo("bench", "bench", "auc", False, 0))


def ppa_graph() -> BenchGraph:
    """The real-size ogbl-ppa stand-in and ppa's ``paper`` preset."""
    from plnlp_core.data.ogb_reader import load_ogb
    from plnlp_core.data.standins import cached_standin

    split = load_ogb(DATASETS.get("ppa"), cached_standin("ppa", "real"))
    return BenchGraph(split.train_pos, split.num_nodes, split.x, load_preset("ppa", "paper"),
                      split.info)


def time_steps(graph: BenchGraph, mode: str, steps: int) -> dict:
    """Builds the model of ``mode`` on ``graph`` and times its steps (in this process)."""
    positives, num_nodes, x, info = graph.positives, graph.num_nodes, graph.x, graph.info
    adj, degree = build_adjacency(positives, num_nodes)
    config = PLNLPConfig.from_mapping({**graph.preset, **MODES[mode], "dataset": info.name})
    model = build_model(config, info, num_nodes)
    optimizer = build_optimizer(model, config)
    sampler = build_negative_sampler(config, EdgeSet.from_csr(adj, undirected=True), degree)
    neighbors = None if config.fanouts is None else NeighborSampler(adj, config.fanouts)
    options = StepOptions.from_config(config)
    generator = torch.Generator().manual_seed(0)
    seconds, held = [], 0
    for step in range(steps + 1):
        if step == 1:  # past the warm-up, which made the optimiser's state
            held = reset_peak_memory()
        index = torch.randint(positives.size(0), (config.batch_size,), generator=generator)
        start = time.perf_counter()
        batch = draw_batch(positives[index], None, sampler, config.num_neg, "shared", generator)
        step_graph = adj
        if neighbors is not None:
            batch, step_graph = sampled_batch(batch, neighbors, generator)
        train_step(model, optimizer, x, step_graph, batch, options)
        seconds.append(time.perf_counter() - start)
    step = statistics.median(seconds[1:])
    return {"step_s": step, "s_per_million_positives": step / config.batch_size * 1e6,
            "batch_size": config.batch_size, "nodes": num_nodes,
            "edges": int(positives.size(0)),
            "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "step_gib": (memory_kib("VmHWM") - held) / 2**20 if held else None}


def reset_peak_memory() -> int:
    """Resets this process's peak resident memory (``VmHWM``) to what it
    holds now, and returns that, in KiB (0 where the kernel allows no reset)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return 0
    return memory_kib("VmRSS")


def memory_kib(field: str) -> int:
    """A ``/proc/self/status`` memory field, in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def measure(graph: str, nodes_per_edge: float, mode: str, steps: int,
            cap_gib: float) -> dict:
    """:func:`time_steps` on ``graph`` (an edge count, or ``ppa``) in a
    child process of its own (its peak resident memory its own) capped at
    ``cap_gib``; a child that cannot allocate or that the kernel kills is
    "out of memory"."""
    command = [sys.executable, __file__, "--child", mode, "--edges", graph,
               "--steps", str(steps), "--nodes-per-edge", str(nodes_per_edge),
               "--cap-gib", str(cap_gib)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        refused = done.returncode in (-9, 137) or any(
            text in done.stderr for text in OUT_OF_MEMORY)
        return {"result": f"out of memory ({cap_gib:g} GiB)" if refused else "failed",
                "detail": done.stderr.strip()[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def cap_data_segment(cap_gib: float) -> None:
    """Caps this process's private writable memory (``RLIMIT_DATA``) at ``cap_gib``."""
    limit = int(cap_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="1e6,1e7,5e7",
                        help="the power-law graphs' edge counts")
    parser.add_argument("--ppa", action="store_true",
                        help="the real-size ppa stand-in and its paper preset instead")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--nodes-per-edge", type=float, default=0.1)
    parser.add_argument("--cap-gib", type=float, default=16.0,
                        help="each mode's process's memory cap (RLIMIT_DATA)")
    parser.add_argument("--child", choices=list(MODES))
    args = parser.parse_args()
    if args.child:
        cap_data_segment(args.cap_gib)
        graph = ppa_graph() if args.edges == "ppa" else \
            power_law_graph(int(float(args.edges)), args.nodes_per_edge)
        print(json.dumps(time_steps(graph, args.child, args.steps)))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| graph | training edges | nodes | mode | batch | s a step | s per 1M positives "
          "| peak GiB | a step's GiB |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for text in ["ppa"] if args.ppa else args.edges.split(","):
        for mode in MODES:
            print(_row(text, mode, args), flush=True)


def _row(text: str, mode: str, args: argparse.Namespace) -> str:
    figures = measure(text, args.nodes_per_edge, mode, args.steps, args.cap_gib)
    if "result" in figures:
        print(figures["detail"], file=sys.stderr)
        return f"| {graph_name(text)} | | | {mode} | | {figures['result']} | | | |"
    return (f"| {graph_name(text)} | {figures['edges']:,} | {figures['nodes']:,} | {mode} "
            f"| {figures['batch_size']:,} "
            f"| {figures['step_s']:.2f} | {figures['s_per_million_positives']:.1f} "
            f"| {figures['peak_gib']:.1f} | {step_memory(figures)} |")


def step_memory(figures: dict) -> str:
    """What the steps added to the process's resident memory, or ``-``."""
    return "-" if figures.get("step_gib") is None else f"{figures['step_gib']:.2f}"


def graph_name(text: str) -> str:
    """The row's graph: the ppa stand-in, or the power-law graph of ``text`` edges."""
    return "ppa stand-in" if text == "ppa" else f"power law, {int(float(text)):,} edges"


if __name__ == "__main__":
    main()
