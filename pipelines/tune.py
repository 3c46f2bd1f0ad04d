"""The sweep: one Ray Tune trial per sampled config, each a full train ->
evaluate run recorded as a nested MLflow run under one sweep run.

    python pipelines/tune.py --dataset ddi --space tune_spaces/ddi.yaml

Search spaces are data (``tune_spaces/*.yaml``); the best trial is picked by
its validation metric.
"""
import argparse
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone, or by ray job

import mlflow  # noqa: E402
import ray  # noqa: E402
from ray import tune  # noqa: E402

from components.artifacts import DatasetArtifact  # noqa: E402
from components.load import load_dataset  # noqa: E402
from components.stage_cache import stage_cache_root  # noqa: E402
from components.tracking import log_config  # noqa: E402
from components.train import checkpoint_root  # noqa: E402
from pipelines.cli import (  # noqa: E402
    add_worker_args,
    load_preset,
    parse_overrides,
    read_mapping,
    worker_group,
)
from pipelines.job import execute, prepare  # noqa: E402
from pipelines.stages import train_and_evaluate  # noqa: E402
from plnlp_core.config import PLNLPConfig  # noqa: E402
from plnlp_core.datasets import DATASETS, resolve_data_root  # noqa: E402
from plnlp_core.errors import PLNLPError  # noqa: E402

TRIAL_CPU = 0.01
DISTRIBUTIONS = {
    "choice": tune.choice, "grid": tune.grid_search, "uniform": lambda b: tune.uniform(*b),
    "loguniform": lambda b: tune.loguniform(*b), "randint": lambda b: tune.randint(*b),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines/tune.py",
                                     description="Sweep PLNLP settings with Ray Tune.")
    parser.add_argument("--dataset", required=True, help=f"one of: {', '.join(DATASETS.names)}")
    parser.add_argument("--space", type=Path, required=True, help="a tune_spaces/*.yaml file")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="fix one setting for every trial")
    parser.add_argument("--num-samples", type=int, help="trials (default: the space's)")
    add_worker_args(parser)
    parser.add_argument("--experiment", help="MLflow experiment (default: plnlp-<dataset>-tune)")
    parser.add_argument("--data-root", help="folder holding OGB datasets")
    parser.add_argument("--work-dir", help="scratch folder shared by all nodes on a cluster")
    return parser.parse_args(argv)


class SearchSpace:
    """A ``tune_spaces/*.yaml`` file: the base settings, the searched ones
    and how trials are compared."""

    def __init__(self, path: Path, dataset: str, overrides: list[str]) -> None:
        DATASETS.get(dataset)
        data = read_mapping(path, "search space")
        self.metric, self.mode = data.get("metric"), data.get("mode", "max")
        self.num_samples = data.get("num_samples", 1)
        self.searched = data.get("space") or {}
        base = {**load_preset(dataset, data.get("preset", "paper")), **parse_overrides(overrides)}
        self.base = PLNLPConfig.from_mapping({**base, "dataset": dataset})
        if not isinstance(self.metric, str) or self.mode not in ("max", "min"):
            raise PLNLPError(f"search space {path} needs `metric: <name>` and `mode: max|min`.")
        for key, spec in self.searched.items():
            self._check(path, key, spec)

    def _check(self, path: Path, key: str, spec: object) -> None:
        if not (isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in DISTRIBUTIONS):
            raise PLNLPError(f"search space {path}: {key} must be one of "
                             f"{{{': [...]}, {'.join(DISTRIBUTIONS)}: [...]}}, got {spec!r}.")
        (kind, values), = spec.items()
        if not isinstance(values, list) or not values:
            raise PLNLPError(f"search space {path}: {key}'s {kind} needs a list of values.")
        for value in values:  # every choice and both bounds must make a valid config
            self.base.replace(**{key: value}).validate()

    def param_space(self) -> dict[str, object]:
        return {key: DISTRIBUTIONS[kind](values)
                for key, spec in self.searched.items() for kind, values in spec.items()}


def trial(params: dict, base: dict, dataset: DatasetArtifact, options: dict) -> None:
    """One Tune trial: a nested MLflow run holding a whole train -> evaluate."""
    config = PLNLPConfig.from_mapping({**base, **params})
    mlflow.set_tracking_uri(options["tracking_uri"])
    with mlflow.start_run(experiment_id=options["experiment_id"],
                          parent_run_id=options["parent_run_id"],
                          run_name=tune.get_context().get_trial_name()):
        log_config(config, asdict(options["workers"]))
        final = train_and_evaluate(dataset, config, options["workers"],
                                   Path(options["checkpoints"]), options["max_failures"])
    tune.report(final)


def sweep(args: argparse.Namespace, space: SearchSpace, work: Path) -> tune.ResultGrid:
    data_root = str(resolve_data_root(args.data_root).resolve())
    dataset = ray.get(load_dataset.remote(args.dataset, data_root,
                                          str(stage_cache_root(args.work_dir))))
    log_config(space.base, {"search_space": str(args.space)})
    mlflow.log_text(args.space.read_text(), "search_space.yaml")
    options = {"tracking_uri": mlflow.get_tracking_uri(),
               "checkpoints": str(checkpoint_root(args.work_dir)),
               "max_failures": args.max_failures,
               "parent_run_id": mlflow.active_run().info.run_id,
               "experiment_id": mlflow.active_run().info.experiment_id,
               "workers": worker_group(args)}
    cpus = ray.cluster_resources().get("CPU", 1)
    concurrent = max(1, int(cpus // (worker_group(args).resources()["CPU"] + TRIAL_CPU)))
    trainable = tune.with_parameters(trial, base=space.base.to_dict(), dataset=dataset,
                                     options=options)
    tuner = tune.Tuner(
        # A trial only waits on its Train workers, so it holds a token CPU share
        # (Tune refuses none) and leaves the cores to them.
        tune.with_resources(trainable, {"CPU": TRIAL_CPU}),
        param_space=space.param_space(),
        tune_config=tune.TuneConfig(metric=space.metric, mode=space.mode,
                                    num_samples=args.num_samples or space.num_samples,
                                    max_concurrent_trials=concurrent),
        run_config=tune.RunConfig(storage_path=str(work / "tune"), name="sweep"),
    )
    return tuner.fit()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    space = prepare(lambda: SearchSpace(args.space, args.dataset, args.overrides),
                    worker_group(args))
    if space is None:
        return 2
    outcome = execute(args.experiment or f"plnlp-{args.dataset}-tune", f"{args.dataset}-sweep",
                      args.work_dir, lambda work: record_best(sweep(args, space, work)))
    if outcome is None:
        return 1
    run_id, best = outcome
    print(f"MLflow sweep run {run_id} in {mlflow.get_tracking_uri()}: best "
          f"{space.metric} {best.metrics[space.metric]:.4f} with {best.config}")
    return 0


def record_best(results: tune.ResultGrid) -> tune.Result:
    """Logs the best trial's final metrics and settings to the sweep run."""
    best = results.get_best_result()
    if best.error is not None:
        raise best.error
    mlflow.log_metrics({f"best_{k}": v for k, v in best.metrics.items() if k.startswith("final_")})
    mlflow.log_params({f"best_{k}": v for k, v in best.config.items()})
    return best


if __name__ == "__main__":
    sys.exit(main())
