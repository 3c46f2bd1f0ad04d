"""Seconds per edge-level epoch on the real ogbl-ddi: training steps timed
and extrapolated to an epoch, and one evaluation of valid and test.

    python benchmarks/edge_epoch.py [--steps 2] [--workload NAME ...]

Workloads: ``mlp`` is the edge level as ddi's former ``ene`` preset (SAGE
2x64, the MLP edge predictor with counts, 65,536 positives a step, 3 shared
negatives), ``mlp-bf16`` the same under ``precision: bf16``, ``ncn`` and
``ncn-bf16`` ddi's ``ene`` preset (NCN's command). Settings are spelt out
here rather than read from the presets, so that the same file times an
older checkout: ``PYTHONPATH=<checkout> python benchmarks/edge_epoch.py
--workload mlp`` gives the figure before a change.
"""
import argparse

import torch
from timing import timed

from plnlp_core.assembly import build_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.epoch import StepOptions, draw_batch, train_step
from plnlp_core.training.experiment import prepare_experiment

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


def main() -> None:
    """Prints one Markdown row a workload on the real ogbl-ddi."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2, help="timed steps after a warm-up one")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="repeatable; all by default")
    args = parser.parse_args()
    split = load_ogb(DATASETS.get("ddi"), resolve_data_root(None))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print("| workload | s/step | steps/epoch | train s/epoch | evaluate s | epoch s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.workload or list(WORKLOADS):
        t = time_epoch(WORKLOADS[name], split, args.steps)
        print(f"| {name} | {t['step']:.2f} | {t['steps']} | {t['train']:.1f} | "
              f"{t['evaluate']:.1f} | {t['train'] + t['evaluate']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
