"""Seconds per edge-level epoch on the real ogbl-ddi: training steps timed
and extrapolated to an epoch, and one evaluation of valid and test; or, with
``--levels``, short epochs of ddi's ``cpu`` model at the node level and the
edge level back to back and their ratio.

    python benchmarks/edge_epoch.py [--steps 2] [--workload NAME ...] [--threads N]
    python benchmarks/edge_epoch.py --levels [--epochs 6] [--threads 1]

Workloads: ``mlp`` is the edge level as ddi's former ``ene`` preset (SAGE
2x64, the MLP edge predictor with counts, 65,536 positives a step, 3 shared
negatives), ``mlp-bf16`` the same under ``precision: bf16``, ``ncn`` and
``ncn-bf16`` ddi's ``ene`` preset (NCN's command). Settings are spelt out
here rather than read from the presets, so that the same file times an
older checkout: ``PYTHONPATH=<checkout> python benchmarks/edge_epoch.py
--workload mlp`` gives the figure before a change.
"""
import argparse
import itertools
import os
import statistics
import time

import torch
from timing import timed

from plnlp_core.assembly import build_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import StepOptions, draw_batch, train_step
from plnlp_core.training.experiment import prepare_experiment, run_experiment
from plnlp_core.training.fitting import EpochResult

MLP = {"encoder": "sage", "embedding_dim": 64, "hidden_channels": 64, "encoder_layers": 2,
       "dropout": 0.3, "encoder_level": "edge", "predictor": "mlp", "predictor_hidden": 64,
       "predictor_layers": 2, "predictor_dropout": 0.3, "loss": "auc", "num_neg": 3,
       "lr": 0.01, "batch_size": 65536}
NCN = {"encoder": "sum", "embedding_dim": 224, "embedding_init": "orthogonal",
       "input_dropout": 0.4, "hidden_channels": 224, "encoder_layers": 1,
       "encoder_residual": True, "encoder_level": "edge", "predictor": "ncn",
       "predictor_hidden": 224, "predictor_dropout": 0.6, "ncn_xlin": True,
       "ncn_two_layer_output": True, "loss": "ce", "num_neg": 1, "negatives": "independent",
       "lr": 0.0021, "predictor_lr": 0.0018, "batch_size": 24576, "eval_batch_size": 131072}
WORKLOADS = {"mlp": MLP, "mlp-bf16": {**MLP, "precision": "bf16"},
             "ncn": NCN, "ncn-bf16": {**NCN, "precision": "bf16"}}
LEVELS = {"node": {**MLP, "encoder_level": "node"}, "edge": MLP}
"""ddi's ``cpu`` preset (``mlp`` is it at the edge level) at each level."""
SHORT_EPOCH = {"max_batches_per_epoch": 2, "eval_every": 1}


def time_epoch(settings: dict[str, object], split: object, steps: int) -> dict[str, float]:
    """Seconds per training step (the mean of ``steps`` after one warm-up
    step), the epoch they make, and one evaluation's seconds."""
    config = PLNLPConfig.from_mapping({"dataset": "ddi", **settings})
    config.validate()
    experiment = prepare_experiment(config, split)
    graph, model = experiment.graph, experiment.model
    sampler, options = build_sampler(config, split, graph), StepOptions.from_config(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(0)
    order = torch.randperm(graph.positives.size(0), generator=generator).split(config.batch_size)
    model.train()
    seconds = []
    for index in order[: steps + 1]:
        batch = draw_batch(graph.positives[index], None, sampler, options.num_neg,
                           options.negatives, generator)
        # bf16: autocast inside train_step
        seconds.append(timed(lambda b=batch: train_step(model, optimizer, None, graph.adj, b,
                                                        options))[0])
    step = sum(seconds[1:]) / steps
    pairs = {"valid": (split.valid_pos, split.valid_neg), "test": (split.test_pos, split.test_neg)}
    # in fp32 at every precision, as fit's
    evaluate_s, _ = timed(lambda: evaluate(model, split.info, None, graph.adj, pairs,
                                           config.eval_batch_size))
    return {"step": step, "steps": len(order), "train": step * len(order),
            "evaluate": evaluate_s}


def time_short_epochs(settings: dict[str, object], split: object, epochs: int) -> dict[str, float]:
    """``fit``'s epochs of two batches, each evaluated on valid and test (as
    ``pipelines/run.py --set max_batches_per_epoch=2`` runs them): the median
    over epochs 2 to ``epochs`` of the training (two steps, their batches
    drawn) and of the whole epoch (the time between the ends of consecutive
    epochs: training, then evaluation), and the first epoch, which also
    holds ``fit``'s set-up and what evaluation builds once."""
    config = PLNLPConfig.from_mapping({"dataset": "ddi", **settings, **SHORT_EPOCH,
                                       "epochs": epochs})
    config.validate()
    experiment = prepare_experiment(config, split)
    ends, train = [], []

    def on_epoch(result: EpochResult) -> None:
        ends.append(time.perf_counter())
        train.append(result.seconds)

    start = time.perf_counter()
    run_experiment(experiment, on_epoch=on_epoch)
    epoch = statistics.median(b - a for a, b in itertools.pairwise(ends))
    return {"train": statistics.median(train[1:]), "epoch": epoch, "first": ends[0] - start}


def compare_levels(split: object, epochs: int) -> None:
    """Prints the short epochs of :data:`LEVELS`, one row each, and their ratio."""
    print(f"ddi `cpu` model, epochs of 2 batches of 65,536 positives, each evaluated on valid "
          f"and test; median of epochs 2-{epochs}")
    print("| level | train s | evaluate s | epoch s | first epoch s |")
    print("| --- | --- | --- | --- | --- |")
    seconds = {}
    for level, settings in LEVELS.items():
        t = time_short_epochs(settings, split, epochs)
        seconds[level] = t["epoch"]
        print(f"| {level} | {t['train']:.2f} | {t['epoch'] - t['train']:.2f} | {t['epoch']:.2f} | "
              f"{t['first']:.2f} |", flush=True)
    print(f"edge / node: {seconds['edge'] / seconds['node']:.2f}")


def main() -> None:
    """Prints one Markdown row a workload on the real ogbl-ddi, or with
    ``--levels`` the two levels' short epochs and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2, help="timed steps after a warm-up one")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="repeatable; all by default")
    parser.add_argument("--levels", action="store_true",
                        help="ddi's cpu model at the node and the edge level, epochs of two "
                             "batches through fit, and the edge level's ratio to the node level")
    parser.add_argument("--epochs", type=int, default=6, help="short epochs a level (--levels)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    split = load_ogb(DATASETS.get("ddi"), resolve_data_root(None))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"load average {os.getloadavg()[0]:.1f}")
    if args.levels:
        compare_levels(split, args.epochs)
        return
    print("| workload | s/step | steps/epoch | train s/epoch | evaluate s | epoch s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.workload or list(WORKLOADS):
        t = time_epoch(WORKLOADS[name], split, args.steps)
        print(f"| {name} | {t['step']:.2f} | {t['steps']} | {t['train']:.1f} | "
              f"{t['evaluate']:.1f} | {t['train'] + t['evaluate']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
