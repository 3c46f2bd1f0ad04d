"""The main job: load -> augment -> train -> evaluate, on Ray, into MLflow.

    python pipelines/run.py --dataset ddi --preset smoke

Runs on the Ray cluster at ``RAY_ADDRESS`` (else a local Ray it starts) and
records to MLflow at ``MLFLOW_TRACKING_URI`` (else MLflow's local SQLite file).
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, or by ray job

import mlflow  # noqa: E402
import ray  # noqa: E402

from components.artifacts import DatasetArtifact  # noqa: E402
from components.augment import augment  # noqa: E402
from components.evaluate import evaluate_checkpoint  # noqa: E402
from components.load import load_dataset  # noqa: E402
from components.tracking import log_config, log_training, mark_failed, summary_metrics  # noqa: E402
from components.train import train  # noqa: E402
from pipelines.cli import parse_args, resolve_config  # noqa: E402
from plnlp_core.config import PLNLPConfig  # noqa: E402
from plnlp_core.datasets import cache_dir, resolve_data_root  # noqa: E402
from plnlp_core.errors import PLNLPError  # noqa: E402


def run_once(
    dataset: DatasetArtifact, config: PLNLPConfig, args: argparse.Namespace, work: Path,
) -> dict:
    """One seed: augment, train, evaluate; logs into the active MLflow run."""
    walks = augment(dataset, config, str(work / "walks")) if config.uses_random_walk else None
    trained = train(dataset, walks, config, str(work), args.num_workers, args.use_gpu,
                    mlflow.get_tracking_uri(), mlflow.active_run().info.run_id)
    final = ray.get(evaluate_checkpoint.remote(dataset, trained, config))
    mlflow.log_metrics({**final, "best_epoch": trained.best_epoch})
    log_training(trained, dataset.meta.metric.replace("@", "_"))
    return final


def pipeline(args: argparse.Namespace, config: PLNLPConfig, work: Path) -> dict:
    data_root = str(resolve_data_root(args.data_root).resolve())
    dataset = ray.get(load_dataset.remote(args.dataset, data_root, str(work / "splits")))
    extra = {"runs": args.runs, "num_workers": args.num_workers, "use_gpu": args.use_gpu}
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


def check_resources(num_workers: int, use_gpu: bool) -> None:
    """Refuses a worker group the cluster can never hold (it would wait forever)."""
    available = ray.cluster_resources()
    need = {"CPU": num_workers, **({"GPU": num_workers} if use_gpu else {})}
    for name, amount in need.items():
        if available.get(name, 0) < amount:
            raise PLNLPError(f"{num_workers} workers need {amount} {name}s but the Ray cluster "
                             f"has {available.get(name, 0):g}; lower --num-workers.")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = resolve_config(args)
        ray.init(ignore_reinit_error=True)
        check_resources(args.num_workers, args.use_gpu)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    mlflow.set_experiment(args.experiment or f"plnlp-{args.dataset}")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="plnlp-", dir=scratch_dir()))
    run = mlflow.start_run(run_name=f"{args.dataset}-{args.preset}")
    try:
        final = pipeline(args, config, work)
        mlflow.end_run()
    except Exception as error:  # the run is recorded as failed, then the error is shown
        reason = failure_reason(error)
        mark_failed(reason)
        print(f"error: {reason}", file=sys.stderr)
        return 1
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"MLflow run {run.info.run_id} in {mlflow.get_tracking_uri()}: "
          + ", ".join(f"{k} {v:.4f}" for k, v in sorted(final.items())))
    return 0


def scratch_dir() -> Path:
    """Where stage outputs of a run go unless ``--work-dir`` says."""
    root = cache_dir() / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


def failure_reason(error: BaseException) -> str:
    """The innermost cause's first line: Ray wraps a task's or worker's error
    in its own (``cause`` on Ray's errors, ``__cause__`` elsewhere)."""
    while (inner := getattr(error, "cause", None) or error.__cause__) not in (None, error):
        error = inner
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


if __name__ == "__main__":
    sys.exit(main())
