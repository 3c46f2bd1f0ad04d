"""A recipe for graphs with node features, measured on Planetoid Cora under
NCN/NCNC's protocol: for each seed a new random split of the undirected edges
(70 % train, 10 % valid, 20 % test, as many random non-edges as positives
for valid and test: ``--dataset cora``'s split, seeded by the seed), the
training edges alone as the message-passing graph, the epoch
picked by validation Hits@100 and the test read at that epoch (OGB's
``Evaluator``). Published test Hits@100: NCNC 89.65 ± 1.36, NCN 89.05,
GAE 89.01, SEAL 81.71, GCN 66.79.

Run it on one core, one run at a time::

    taskset -c 1 python benchmarks/cora_recipe.py --seeds 0-9 --config recipe.yaml lr=0.005

``--config`` takes YAML files and ``key=value`` overrides (values read as
YAML), applied in order over :data:`RECIPE`, ``--dataset cora``'s default
preset. ``--dataset citeseer`` (or ``pubmed``) measures it on another Planetoid
graph. The files are read from ``--root``'s ``planetoid/<Name>/raw``
(default ``$PLNLP_DATA_ROOT``, else ``../shared/datasets``).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

from pipelines.planning.presets import load_preset
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, LinkSplit
from plnlp_core.data.planetoid import load_planetoid
from plnlp_core.training.experiment import prepare_experiment, run_experiment

RECIPE = load_preset("planetoid", "default")
"""The settings a run starts from, before ``--config``: ``--dataset cora``'s default."""
NCN = (0.7, 0.1, 0.2)


def planetoid_split(dataset: str, root: Path, work: Path, seed: int) -> LinkSplit:
    """NCN's split of ``dataset`` (``cora``) for ``seed``, as ``--dataset``
    makes it (:func:`plnlp_core.data.planetoid.load_planetoid`, from
    ``root``'s ``planetoid/<Name>/raw``): scored by Hits@20/50/100, AUC and MRR."""
    return load_planetoid(DATASETS.get(dataset), root, work, NCN, seed)


def read_settings(items: list[str]) -> dict[str, object]:
    """:data:`RECIPE` with each YAML file or ``key=value`` of ``items`` over it."""
    return with_overrides(RECIPE, items)


def with_overrides(settings: dict[str, object], items: list[str]) -> dict[str, object]:
    """A copy of ``settings`` with each YAML file or ``key=value`` (its value
    read as YAML) of ``items`` over it, in order."""
    settings = dict(settings)
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


def run_seed(settings: dict[str, object], dataset: str, root: Path, work: Path,
             seed: int) -> dict[str, float]:
    """One run: the split and the model of ``seed``, trained; the metrics of
    the best validation epoch and the training seconds."""
    split = planetoid_split(dataset, root, work, seed)
    config = PLNLPConfig.from_mapping({**settings, "dataset": dataset, "seed": seed})
    start = time.perf_counter()
    result = run_experiment(prepare_experiment(config, split))
    return {**result.best_metrics, "best_epoch": result.best_epoch,
            "seconds": time.perf_counter() - start}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", nargs="*", default=[],
                        help="YAML files and key=value overrides, in order")
    parser.add_argument("--dataset", default="cora", choices=["cora", "citeseer", "pubmed"])
    parser.add_argument("--seeds", default="0-9")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get(
        "PLNLP_DATA_ROOT", Path(__file__).resolve().parents[2] / "shared" / "datasets")),
                        help="the data root holding planetoid/<Name>/raw")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    settings = read_settings(args.config)
    work = Path(tempfile.mkdtemp(prefix="cora-recipe-"))
    print(yaml.safe_dump(settings, sort_keys=False).strip(), flush=True)
    keys = ["valid_hits_20", "valid_hits_50", "valid_hits_100", "valid_auc",
            "test_hits_20", "test_hits_50", "test_hits_100", "test_auc", "seconds"]
    rows = []
    for seed in parse_seeds(args.seeds):
        row = run_seed(settings, args.dataset, args.root, work, seed)
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
