"""The main job: load -> augment -> train -> evaluate, on Ray, into MLflow.

    python pipelines/run.py --dataset ddi --preset smoke

Runs on the Ray cluster at ``RAY_ADDRESS`` (else a local Ray it starts) and
records to MLflow at ``MLFLOW_TRACKING_URI`` (else MLflow's local SQLite file).
"""
import argparse
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, or by ray job

import mlflow  # noqa: E402
import ray  # noqa: E402

from components.artifacts import DatasetArtifact  # noqa: E402
from components.augment import augment  # noqa: E402
from components.evaluate import evaluate_checkpoint  # noqa: E402
from components.load import load_dataset  # noqa: E402
from components.tracking import log_config, log_training, summary_metrics  # noqa: E402
from components.train import train  # noqa: E402
from pipelines.cli import parse_args, resolve_config, worker_group  # noqa: E402
from pipelines.job import execute, prepare  # noqa: E402
from plnlp_core.config import PLNLPConfig  # noqa: E402
from plnlp_core.datasets import resolve_data_root  # noqa: E402


def run_once(
    dataset: DatasetArtifact, config: PLNLPConfig, args: argparse.Namespace, work: Path,
) -> dict:
    """One seed: augment, train, evaluate; logs into the active MLflow run."""
    walks = augment(dataset, config, str(work / "walks")) if config.uses_random_walk else None
    trained = train(dataset, walks, config, str(work), worker_group(args),
                    mlflow.get_tracking_uri(), mlflow.active_run().info.run_id)
    final = ray.get(evaluate_checkpoint.remote(dataset, trained, config))
    mlflow.log_metrics({**final, "best_epoch": trained.best_epoch})
    log_training(trained, dataset.meta.metric.replace("@", "_"))
    return final


def pipeline(args: argparse.Namespace, config: PLNLPConfig, work: Path) -> dict:
    data_root = str(resolve_data_root(args.data_root).resolve())
    dataset = ray.get(load_dataset.remote(args.dataset, data_root, str(work / "splits")))
    extra = {"runs": args.runs, **asdict(worker_group(args))}
    log_config(config, extra)
    if args.runs == 1:
        return run_once(dataset, config, args, work)
    finals = []
    for i in range(args.runs):
        seeded = config.replace(seed=config.seed + i)
        with mlflow.start_run(run_name=f"seed-{seeded.seed}", nested=True):
            log_config(seeded, extra)
            finals.append(run_once(dataset, seeded, args, work / f"seed-{seeded.seed}"))
    summary = summary_metrics(finals)
    mlflow.log_metrics(summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = prepare(lambda: resolve_config(args), worker_group(args))
    if config is None:
        return 2
    outcome = execute(args.experiment or f"plnlp-{args.dataset}", f"{args.dataset}-{args.preset}",
                      args.work_dir, lambda work: pipeline(args, config, work))
    if outcome is None:
        return 1
    run_id, final = outcome
    print(f"MLflow run {run_id} in {mlflow.get_tracking_uri()}: "
          + ", ".join(f"{k} {v:.4f}" for k, v in sorted(final.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
