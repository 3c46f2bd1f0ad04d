"""Where an edge-level training step and an evaluation spend their time, part
by part, on Cora (``planetoid.yaml``'s default: NCN's predictor over a
projection of the node features) or on the real ogbl-ddi (its ``cpu`` model
at the edge level), and which way the common neighbours were summed.

    python benchmarks/edge_step_parts.py --dataset cora [--steps 20] [--threads 1]
    python benchmarks/edge_step_parts.py --dataset ddi [--steps 3] [--threads 1]

Each part is timed where the step calls it (inclusive: the predictor holds
the common-neighbour sum; the backward pass holds the sums' backward), in
milliseconds a step over ``--steps`` steps after a warm-up one, beside the
whole step; then one evaluation of valid and test, after the first (which
makes what evaluation keeps).
"""
import argparse
import collections
import functools
import os
import tempfile
import time
from pathlib import Path

import torch
from edge_epoch import LEVELS
from timing import device_name

from plnlp_core.assembly import build_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.data.planetoid import load_planetoid
from plnlp_core.nn.edge_level import common_neighbor_lists, common_neighbors, intersection
from plnlp_core.nn.encoders.encoder import GNNEncoder
from plnlp_core.nn.node_input import NodeInput
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import StepOptions, draw_batch, train_step
from plnlp_core.training.experiment import prepare_experiment
from plnlp_core.training.host_allocator import freed_memory_kept

SECONDS: collections.Counter[str] = collections.Counter()
WAYS: collections.Counter[str] = collections.Counter()


def timing(label: str, owner: object, name: str) -> None:
    """Replaces ``owner.name`` by itself adding its seconds to ``label``."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def timed(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def instrument() -> None:
    """Times the parts of an edge-level step, and counts the summing ways."""
    parts = [("node input (feature projection)", NodeInput, "forward"),
             ("encoder", GNNEncoder, "forward"),
             ("target-edge removal and edge dropout", common_neighbors.AdjacencyLookup,
              "without"),
             ("common-neighbour lists", common_neighbors, "cpu_common_neighbor_lists"),
             ("common-neighbour sum (and NCN's xlin)", common_neighbor_lists.CommonNeighborLists,
              "sum"),
             ("dense bit-row product", common_neighbors, "dense_common_neighbor_sum"),
             ("common-neighbour sum's backward", intersection, "scatter_sums"),
             ("backward pass, all", torch.Tensor, "backward")]
    for label, owner, name in parts:
        timing(label, owner, name)
    way = common_neighbors.summing_way

    def counted(lookup: object, pairs: torch.Tensor) -> str:
        chosen = way(lookup, pairs)
        WAYS[chosen] += 1
        return chosen

    common_neighbors.summing_way = counted


def load(dataset: str) -> tuple[PLNLPConfig, object]:
    """The config and split of ``dataset``: Cora's default preset and NCN's
    split of seed 0, or ddi's ``cpu`` model at the edge level."""
    root = resolve_data_root(None)
    if dataset == "cora":
        from cora_recipe import RECIPE

        split = load_planetoid(DATASETS.get("cora"), root, Path(tempfile.mkdtemp()),
                               (0.7, 0.1, 0.2), 0)
        return PLNLPConfig.from_mapping({**RECIPE, "dataset": "cora"}), split
    split = load_ogb(DATASETS.get("ddi"), root)
    return PLNLPConfig.from_mapping({"dataset": "ddi", **LEVELS["edge"]}), split


def run_steps(config: PLNLPConfig, split: object, steps: int) -> tuple[float, float]:
    """Seconds a step (mean of ``steps`` after a warm-up one) and of an
    evaluation after the first, the parts' seconds in :data:`SECONDS`."""
    experiment = prepare_experiment(config, split)
    graph, model = experiment.graph, experiment.model
    sampler, options = build_sampler(config, split, graph), StepOptions.from_config(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(graph.positives.size(0), generator=generator)
    batches = order.split(config.batch_size)
    model.train()

    def step(index: int) -> None:
        batch = draw_batch(graph.positives[batches[index % len(batches)]], None, sampler,
                           options.num_neg, options.negatives, generator)
        train_step(model, optimizer, split.x, graph.adj, batch, options)

    step(0)
    SECONDS.clear()
    WAYS.clear()
    start = time.perf_counter()
    for index in range(1, steps + 1):
        step(index)
    step_seconds = (time.perf_counter() - start) / steps
    pairs = {"valid": (split.valid_pos, split.valid_neg), "test": (split.test_pos, split.test_neg)}

    def evaluation() -> None:
        evaluate(model, split.info, split.x, graph.adj, pairs, config.eval_batch_size)

    evaluation()
    start = time.perf_counter()
    evaluation()
    return step_seconds, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=["cora", "ddi"], default="cora")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config, split = load(args.dataset)
    instrument()
    with freed_memory_kept():  # as run_experiment trains
        step, evaluation = run_steps(config, split, args.steps)
    print(f"{args.dataset}: {device_name(torch.device('cpu'))}, torch {torch.__version__}, "
          f"{args.threads} thread(s), "
          f"load average {os.getloadavg()[0]:.1f}; summed by {dict(WAYS)}")
    print("| part | ms a step | share of the step |")
    print("| --- | --- | --- |")
    print(f"| whole step | {1000 * step:.1f} | 100 % |")
    for label, seconds in SECONDS.items():
        print(f"| {label} | {1000 * seconds / args.steps:.1f} | "
              f"{100 * seconds / args.steps / step:.0f} % |")
    print(f"| one evaluation of valid and test (after the first) | {1000 * evaluation:.1f} | |")


if __name__ == "__main__":
    main()
