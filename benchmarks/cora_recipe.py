"""A recipe for graphs with node features, measured on Planetoid Cora under
NCN/NCNC's protocol: for each seed a new random split of the undirected edges
(70 % train, 10 % valid, 20 % test, PyG's ``RandomLinkSplit`` after
``torch.manual_seed(seed)``, as many random non-edges as positives for valid
and test), the training edges alone as the message-passing graph, the epoch
picked by validation Hits@100 and the test read at that epoch (OGB's
``Evaluator``). Published test Hits@100: NCNC 89.65 ± 1.36, NCN 89.05,
GAE 89.01, SEAL 81.71, GCN 66.79.

Run it on one core, one run at a time::

    taskset -c 1 python benchmarks/cora_recipe.py --seeds 0-9 --config recipe.yaml lr=0.005

``--config`` takes YAML files and ``key=value`` overrides (values read as
YAML), applied in order over :data:`RECIPE`. The Cora files are read from
``--root`` (a writable copy of ``Cora/raw``).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
import yaml

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.scoring.evaluation import evaluate
from plnlp_core.training.experiment import prepare_experiment, run_experiment

RECIPE: dict[str, object] = {
    "encoder": "pure_gcn",
    "node_input": "features",
    "input_projection": 128,
    "input_dropout": 0.7,
    "hidden_channels": 128,
    "encoder_layers": 1,
    "encoder_residual": False,
    "dropout": 0.0,
    "encoder_level": "edge",
    "target_edge_removal": True,
    "edge_dropout": 0.4,
    "predictor": "ncn",
    "predictor_hidden": 128,
    "predictor_dropout": 0.05,
    "ncn_xlin": True,
    "ncn_tail_activation": True,
    "loss": "auc",
    "sampler": "global",
    "num_neg": 3,
    "lr": 0.0043,
    "epochs": 70,
    "batch_size": 1152,
    "eval_every": 1,
    "checkpoint_every": 1000,
}
"""The settings the recipe starts from, before ``--config``."""

INFO = DatasetInfo("cora", "ogbl-ddi", "hits@100", directed=False, feature_dim=1433)
"""Cora scored by Hits@20/50/100, chosen by validation Hits@100."""

AUC_INFO = DatasetInfo("cora", "cora", "auc", directed=False, feature_dim=1433)


def cora_split(root: str, seed: int) -> LinkSplit:
    """NCN's split of Cora for ``seed``, as a :class:`LinkSplit`."""
    from torch_geometric.datasets import Planetoid
    from torch_geometric.transforms import RandomLinkSplit

    data = Planetoid(root, "Cora")[0]
    torch.manual_seed(seed)
    train, valid, test = RandomLinkSplit(num_val=0.1, num_test=0.2, is_undirected=True,
                                         add_negative_train_samples=False,
                                         split_labels=True)(data)
    return LinkSplit(
        info=INFO, num_nodes=data.num_nodes, x=data.x.float(),
        train_pos=train.pos_edge_label_index.t().contiguous(), train_weight=None,
        train_year=None,
        valid_pos=valid.pos_edge_label_index.t().contiguous(),
        valid_neg=valid.neg_edge_label_index.t().contiguous(),
        test_pos=test.pos_edge_label_index.t().contiguous(),
        test_neg=test.neg_edge_label_index.t().contiguous())


def read_settings(items: list[str]) -> dict[str, object]:
    """:data:`RECIPE` with each YAML file or ``key=value`` of ``items`` over it."""
    settings = dict(RECIPE)
    for item in items:
        if "=" in item and not Path(item).exists():
            key, _, value = item.partition("=")
            settings[key] = yaml.safe_load(value)
        else:
            settings.update(yaml.safe_load(Path(item).read_text()) or {})
    return settings


def parse_seeds(text: str) -> list[int]:
    """``0-9`` or ``0,3,5`` as a list of seeds."""
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(each) for each in text.split(",")]


def run_seed(settings: dict[str, object], root: str, seed: int) -> dict[str, float]:
    """One run: the split and the model of ``seed``, trained; the metrics of
    the best validation epoch, with its AUC and the training seconds."""
    split = cora_split(root, seed)
    config = PLNLPConfig.from_mapping({**settings, "dataset": "cora", "seed": seed})
    start = time.perf_counter()
    result = run_experiment(prepare_experiment(config, split))
    seconds = time.perf_counter() - start
    train_seconds = sum(epoch.seconds for epoch in result.history)
    experiment = prepare_experiment(config, split)
    experiment.model.load_state_dict(result.best_state)
    splits = {"valid": (split.valid_pos, split.valid_neg), "test": (split.test_pos, split.test_neg)}
    aucs = evaluate(experiment.model, AUC_INFO, split.x, experiment.graph.adj, splits,
                    config.eval_batch_size)
    return {**result.best_metrics, "valid_auc": aucs["valid_auc"], "test_auc": aucs["test_auc"],
            "best_epoch": result.best_epoch, "seconds": seconds, "train_seconds": train_seconds}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="*", default=[],
                        help="YAML files and key=value overrides, in order")
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--root", default="/tmp/cora_root")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    settings = read_settings(args.config)
    print(yaml.safe_dump(settings, sort_keys=False).strip(), flush=True)
    keys = ["valid_hits_20", "valid_hits_50", "valid_hits_100", "valid_auc",
            "test_hits_20", "test_hits_50", "test_hits_100", "test_auc", "seconds"]
    rows = []
    for seed in parse_seeds(args.seeds):
        row = run_seed(settings, args.root, seed)
        rows.append(row)
        print(f"seed {seed} best epoch {row['best_epoch']:3d}  "
              + "  ".join(f"{key} {100 * row[key] if 'seconds' not in key else row[key]:.2f}"
                          for key in keys), flush=True)
    print("mean ± std over", len(rows), "seeds:")
    for key in keys:
        values = [row[key] * (1 if key == "seconds" else 100) for row in rows]
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"  {key:15s} {statistics.mean(values):6.2f} ± {spread:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
