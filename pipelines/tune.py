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

from pipelines.cli import (  # noqa: E402
    GraphSource,
    add_graph_args,
    add_worker_args,
    graph_source,
    load_preset,
    parse_overrides,
    read_mapping,
    worker_group,
)
from plnlp_core.config import PLNLPConfig  # noqa: E402
from plnlp_core.datasets import DATASETS  # noqa: E402
from plnlp_core.errors import PLNLPError  # noqa: E402

TRIAL_CPU = 0.01
DISTRIBUTIONS = ("choice", "grid", "uniform", "loguniform", "randint")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines/tune.py",
                                     description="Sweep PLNLP settings with Ray Tune.")
    parser.add_argument("--dataset", required=True,
                        help=f"one of {', '.join(DATASETS.names)}, or the path of your edge list "
                             "or split folder (see pipelines/run.py --help)")
    parser.add_argument("--space", type=Path, required=True, help="a tune_spaces/*.yaml file")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="fix one setting for every trial")
    parser.add_argument("--num-samples", type=int, help="trials (default: the space's)")
    add_worker_args(parser)
    parser.add_argument("--experiment", help="MLflow experiment (default: plnlp-<dataset>-tune)")
    parser.add_argument("--data-root", help="folder holding OGB datasets")
    parser.add_argument("--work-dir", help="scratch folder shared by all nodes on a cluster")
    parser.add_argument("--verbose", action="store_true",
                        help="show Ray's and MLflow's own progress lines too")
    add_graph_args(parser)
    return parser.parse_args(argv)


class SearchSpace:
    """A ``tune_spaces/*.yaml`` file: the base settings, the searched ones
    and how trials are compared."""

    def __init__(self, path: Path, source: GraphSource, overrides: list[str]) -> None:
        data = read_mapping(path, "search space")
        self.metric, self.mode = data.get("metric"), data.get("mode", "max")
        self.num_samples = data.get("num_samples", 1)
        self.searched = data.get("space") or {}
        self.info = source.info if source.path is not None else None
        preset = data.get("preset", "default" if source.path is not None else "paper")
        base = {**load_preset(source.presets, preset), **parse_overrides(overrides)}
        self.base = PLNLPConfig.from_mapping({**base, "dataset": source.info.name})
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
            self.base.replace(**{key: value}).validate(self.info)

    def param_space(self) -> dict[str, object]:
        """Ray Tune's distributions of the searched settings."""
        from ray import tune

        make = {"choice": tune.choice, "grid": tune.grid_search,
                "uniform": lambda b: tune.uniform(*b), "loguniform": lambda b: tune.loguniform(*b),
                "randint": lambda b: tune.randint(*b)}
        return {key: make[kind](values)
                for key, spec in self.searched.items() for kind, values in spec.items()}


def trial(params: dict, base: dict, dataset: object, options: dict) -> None:
    """One Tune trial: a nested MLflow run holding a whole train -> evaluate."""
    import mlflow
    from ray import tune

    from components.tracking import log_config
    from pipelines.stages import train_and_evaluate

    config = PLNLPConfig.from_mapping({**base, **params})
    mlflow.set_tracking_uri(options["tracking_uri"])
    with mlflow.start_run(experiment_id=options["experiment_id"],
                          parent_run_id=options["parent_run_id"],
                          run_name=tune.get_context().get_trial_name()):
        log_config(config, asdict(options["workers"]))
        final = train_and_evaluate(dataset, config, options["workers"],
                                   Path(options["checkpoints"]), options["max_failures"])
    tune.report(final)


def sweep(args: argparse.Namespace, space: SearchSpace, source: GraphSource,
          work: Path) -> object:
    """Loads the graph once and runs the trials; the sweep run holds only
    the fixed settings as params, the searched ones as its space."""
    import mlflow
    import ray
    from ray import tune

    from components.tracking import log_config
    from components.train import checkpoint_root
    from pipelines.stages import load

    dataset = load(args, source)
    log_config(space.base, {"search_space": str(args.space), "searched": ",".join(space.searched)},
               exclude=space.searched)
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
    try:
        source = graph_source(args)
        space = SearchSpace(args.space, source, args.overrides)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import mlflow

    from pipelines.console import quiet_console
    from pipelines.job import execute, prepare

    if prepare(lambda: space, worker_group(args), args.verbose) is None:
        return 2
    quiet_console(args.verbose)
    outcome = execute(args.experiment or f"plnlp-{source.info.name}-tune",
                      f"{source.info.name}-sweep", args.work_dir,
                      lambda work: record_best(sweep(args, space, source, work)))
    if outcome is None:
        return 1
    run_id, best = outcome
    print(f"MLflow sweep run {run_id} in {mlflow.get_tracking_uri()}: best "
          f"{space.metric} {best.metrics[space.metric]:.4f} with {best.config}")
    return 0


def record_best(results: object) -> object:
    """Logs the best trial's final metrics and settings to the sweep run."""
    import mlflow

    best = results.get_best_result()
    if best.error is not None:
        raise best.error
    mlflow.log_metrics({f"best_{k}": v for k, v in best.metrics.items() if k.startswith("final_")})
    mlflow.log_params({f"best_{k}": v for k, v in best.config.items()})
    return best


if __name__ == "__main__":
    sys.exit(main())
