"""HeaRT's figures on the real ogbl-ddi (:mod:`plnlp_core.scoring.heart`): the
hard negatives of the validation and test positives under each mode
(``heart``, HeaRT's protocol, and ``heart_filtered``), built once (seconds,
peak memory), their ceilings (a perfect predictor's figures), then the MRR
and Hits@K of resource allocation and, with ``--preset``, of a model trained
with that ddi preset (seconds too).

    python benchmarks/heart_figures.py [--data-root DIR] [--preset cpu] [--epochs N]
                                       [--modes heart,heart_filtered]
                                       [--device cpu|cuda] [--json FILE]

The pipeline builds the same negatives with ``--set heart_negatives=500``
(the ``heart`` stage); this script times the parts alone.
"""
import argparse
import json
from collections.abc import Callable

import torch
from timing import MIB, PeakMemory, timed
from torch import Tensor
from workloads import Workload, load_split, preset_config

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.heart import HardNegatives, heart_split_metrics, split_heart_negatives
from plnlp_core.scoring.heuristics import adjacency, heuristic_scorer
from plnlp_core.training.experiment import prepare_experiment, run_experiment

Scorer = Callable[[Tensor], Tensor]


def build_negatives(split: LinkSplit, num_negatives: int,
                    mode: str) -> tuple[HardNegatives, dict[str, float]]:
    """The hard negatives of each part's positives under ``mode`` with their
    ceilings, and the seconds and the peak memory that building them took."""
    with PeakMemory() as memory:
        seconds, hard = timed(lambda: split_heart_negatives(split, num_negatives, mode))
    size = sum(n.numel() * n.element_size() for n in hard.negatives.values())
    return hard, {"seconds": seconds, "peak_rss_mib": memory.rss / MIB,
                  "negatives_mib": size / MIB, **hard.ceiling}


def ra_scorer(split: LinkSplit) -> Scorer:
    """Resource allocation of any pairs on the training graph."""
    return heuristic_scorer("ra", adjacency(split.train_pos, split.num_nodes))


def trained_scorer(split: LinkSplit, preset: str, epochs: int | None,
                   device: torch.device) -> tuple[Scorer, dict]:
    """A model trained with ddi's ``preset`` (``epochs`` over its own), as a
    scorer of pairs at its best validation epoch, its seconds and OGB metrics."""
    overrides = {} if epochs is None else {"epochs": epochs}
    config = preset_config(Workload(f"ddi {preset}", "ddi", preset, "real", 0, overrides))
    experiment = prepare_experiment(config, split)
    model = experiment.model.to(device)
    seconds, result = timed(lambda: run_experiment(experiment), device)
    model.load_state_dict(result.best_state)
    model.eval()
    adj = experiment.graph.adj.to(device)
    x = None if split.x is None else split.x.to(device)
    with torch.no_grad():
        h = model.encode(x, adj)
    return (lambda pairs: model.score(h, pairs.to(device), adj).float().cpu()), {
        "train_seconds": seconds, "best_epoch": result.best_epoch, **result.best_metrics}


def heart_figures(scorer: Scorer, hard: HardNegatives) -> dict:
    """``valid_heart_mrr``, ``test_heart_hits_20``, ... of ``scorer`` (the
    ceilings left out), and the seconds scoring took."""
    seconds, metrics = timed(lambda: heart_split_metrics(scorer, hard))
    return {**{k: v for k, v in metrics.items() if k not in hard.ceiling},
            "score_seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--num-negatives", type=int, default=500)
    parser.add_argument("--modes", default="heart,heart_filtered")
    parser.add_argument("--preset", default=None, help="also train ddi's preset (e.g. cpu)")
    parser.add_argument("--epochs", type=int, default=None, help="over the preset's")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    split = load_split("ddi", "real", args.data_root)
    ra = ra_scorer(split)
    model = None
    report = {}
    if args.preset:
        model, report[f"plnlp:{args.preset}"] = trained_scorer(
            split, args.preset, args.epochs, torch.device(args.device))
    for mode in args.modes.split(","):
        hard, build = build_negatives(split, args.num_negatives, mode)
        report[f"{mode}:build"] = build
        report[f"{mode}:ra"] = heart_figures(ra, hard)
        if model is not None:
            report[f"{mode}:plnlp:{args.preset}"] = heart_figures(model, hard)
    for method, figures in report.items():
        print(method, " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in figures.items()), flush=True)
    if args.json:
        with open(args.json, "w") as file:
            json.dump(report, file, indent=1)


if __name__ == "__main__":
    main()
