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

from components.load import load_dataset  # noqa: E402
from components.stage_cache import stage_cache_root  # noqa: E402
from components.tracking import log_config, summary_metrics  # noqa: E402
from components.train import checkpoint_root  # noqa: E402
from pipelines.cli import parse_args, worker_group  # noqa: E402
from pipelines.job import execute, prepare  # noqa: E402
from pipelines.resume import RunPlan, plan_run  # noqa: E402
from pipelines.stages import train_and_evaluate  # noqa: E402
from plnlp_core.datasets import resolve_data_root  # noqa: E402


def pipeline(args: argparse.Namespace, plan: RunPlan) -> dict:
    """Loads the dataset once, then one seed, or ``--runs`` seeds as nested
    runs whose final metrics are summarised as mean and std. A resumed run
    goes on with its unfinished seeds."""
    data_root = str(resolve_data_root(args.data_root).resolve())
    dataset = ray.get(load_dataset.remote(args.dataset, data_root,
                                          str(stage_cache_root(args.work_dir))))
    extra = {"runs": plan.runs, "max_failures": args.max_failures, **asdict(worker_group(args))}
    if plan.run_id is None:
        log_config(plan.config, extra)
    checkpoints = checkpoint_root(args.work_dir)
    if plan.runs == 1:
        return train_and_evaluate(dataset, plan.config, worker_group(args), checkpoints,
                                  args.max_failures)
    finals = []
    for i in range(plan.runs):
        seeded = plan.config.replace(seed=plan.config.seed + i)
        if seeded.seed in plan.finished:
            finals.append(plan.finished[seeded.seed])
            continue
        child = plan.children.get(seeded.seed)
        with mlflow.start_run(run_id=child, run_name=f"seed-{seeded.seed}", nested=True):
            if child is None:
                log_config(seeded, extra)
            finals.append(train_and_evaluate(dataset, seeded, worker_group(args), checkpoints,
                                             args.max_failures))
    summary = summary_metrics(finals)
    mlflow.log_metrics(summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = prepare(lambda: plan_run(args), worker_group(args))
    if plan is None:
        return 2
    outcome = execute(args.experiment or f"plnlp-{args.dataset}", f"{args.dataset}-{args.preset}",
                      args.work_dir, lambda work: pipeline(args, plan), plan.run_id)
    if outcome is None:
        return 1
    run_id, final = outcome
    print(f"MLflow run {run_id} in {mlflow.get_tracking_uri()}: "
          + ", ".join(f"{k} {v:.4f}" for k, v in sorted(final.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
