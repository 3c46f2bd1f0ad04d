"""The sweep: one Ray Tune trial per sampled config, each a whole
augment -> train -> evaluate run recorded as a child MLflow run of one sweep
run; each trial reports every evaluated epoch to Tune, so that an ASHA
scheduler stops weak ones early.

    python pipelines/tune.py --dataset ddi --space tune_spaces/ablation.yaml

Search spaces are data (``tune_spaces/*.yaml``, see
:mod:`pipelines.sweep_space`); trials are compared by a validation metric.
"""
import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.arguments import add_graph_args, add_register_arg
from pipelines.process_exit import skip_final_collection
from pipelines.settings import (
    GraphSource,
    graph_source,
    load_preset,
    parse_overrides,
    read_mapping,
)
from pipelines.sweep_space import SearchSpace
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS
from plnlp_core.errors import PLNLPError

if TYPE_CHECKING:
    from components.storage import Location

# A trial only waits on its Train workers, which hold the cores: it holds no
# CPU (Tune takes no empty request, hence a token of memory).
TRIAL_RESOURCES = {"CPU": 0, "memory": 64 << 20}


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
    parser.add_argument("--max-concurrent", type=int,
                        help="trials at once (default: the space's, else what the cluster holds)")
    parser.add_argument("--num-workers", type=int, help="Ray Train workers per trial")
    parser.add_argument("--cpus-per-worker", type=int, help="CPUs each trial's worker holds")
    parser.add_argument("--gpus-per-worker", type=float,
                        help="GPUs each trial's worker holds; a fraction shares one GPU")
    parser.add_argument("--max-failures", type=int, default=3,
                        help="restarts of a trial's dead worker group (default: 3)")
    parser.add_argument("--experiment", help="MLflow experiment (default: plnlp-<dataset>-tune)")
    parser.add_argument("--data-root", help="folder holding OGB datasets")
    parser.add_argument("--work-dir", help="scratch folder shared by all nodes on a cluster")
    parser.add_argument("--verbose", action="store_true",
                        help="show Ray's and MLflow's own progress lines too")
    add_register_arg(parser)
    add_graph_args(parser)
    return parser.parse_args(argv)


def read_space(args: argparse.Namespace, source: GraphSource) -> SearchSpace:
    """The ``--space`` file with the command line's settings on top."""
    data = read_mapping(args.space, "search space")
    preset = data.get("preset", "default" if source.path is not None else "paper")
    settings = {**load_preset(source.presets, preset), **parse_overrides(args.overrides)}
    base = PLNLPConfig.from_mapping({**settings, "dataset": source.info.name})
    counts = {"num_samples": args.num_samples, "max_concurrent": args.max_concurrent}
    data.update({key: value for key, value in counts.items() if value is not None})
    resources = {"workers": args.num_workers, "cpus_per_worker": args.cpus_per_worker,
                 "gpus_per_worker": args.gpus_per_worker}
    return SearchSpace(args.space, base, source.info, data,
                       {key: value for key, value in resources.items() if value is not None})


def sweep(args: argparse.Namespace, space: SearchSpace, source: GraphSource,
          work: "Location") -> object:
    """Loads the graph once, runs the trials, closes their child runs and
    logs the sweep's summary to its run; returns the best trial's row."""
    import mlflow
    import ray
    from ray import tune

    from components.checkpoints import checkpoint_root
    from components.sweep_tracking import (
        TrialOutcomes,
        close_trial_runs,
        log_sweep_summary,
        trial_table,
    )
    from components.sweep_trial import SweepTrial
    from components.tracking import log_config
    from pipelines.job import describe_failure
    from pipelines.load_stage import load_stage

    dataset = load_stage(args, source)
    workers = space.resources.worker_group()
    log_config(space.base, space.describe(), exclude=space.searched)
    mlflow.log_text(args.space.read_text(), "search_space.yaml")
    parent = mlflow.active_run()
    options = {"tracking_uri": mlflow.get_tracking_uri(), "metric": space.metric,
               "checkpoints": checkpoint_root(args.work_dir).uri,
               "max_failures": args.max_failures, "parent_run_id": parent.info.run_id,
               "experiment_id": parent.info.experiment_id, "workers": workers,
               "decision_epochs": space.decision_epochs()}
    outcomes = TrialOutcomes(describe_failure, space.metric)
    trainable = tune.with_parameters(SweepTrial, base=space.base.to_dict(), dataset=dataset,
                                     options=options)
    tune.Tuner(
        tune.with_resources(trainable, TRIAL_RESOURCES),
        param_space=space.param_space(),
        tune_config=tune.TuneConfig(
            metric=space.metric, mode=space.mode, search_alg=space.search_algorithm(),
            scheduler=space.scheduler(), num_samples=space.num_samples,
            max_concurrent_trials=space.concurrency(ray.cluster_resources())),
        run_config=tune.RunConfig(storage_path=(work / "tune").uri, name="sweep",
                                  callbacks=[outcomes], verbose=1 if args.verbose else 0),
    ).fit()
    run_ids = close_trial_runs(parent.info.run_id, outcomes.outcomes, lambda settings: log_config(
        space.base.replace(**settings), asdict(workers)))
    table = trial_table(outcomes.outcomes, run_ids, space.metric, space.mode)
    best = log_sweep_summary(table, list(space.searched), space.metric, space.mode,
                             parent.info.run_name)
    if best is None:
        reasons = [o.reason for o in outcomes.outcomes.values() if o.reason]
        raise PLNLPError(f"no trial was evaluated; the first failed with: "
                         f"{reasons[0] if reasons else 'no reason given'}")
    print_sweep_summary(table)
    if args.register is not None:
        from components.model_registry import register_link_model

        print(register_link_model(best["run_id"], args.register, f"final_{space.metric}"),
              flush=True)
    return best


def print_sweep_summary(table: object) -> None:
    """How many trials completed, stopped early and failed."""
    counts = table["status"].value_counts()
    print(f"{len(table)} trials: {counts.get('completed', 0)} completed, "
          f"{counts.get('stopped_early', 0)} stopped early, {counts.get('failed', 0)} failed")


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    args = parse_args(argv)
    try:
        source = graph_source(args)
        space = read_space(args, source)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import mlflow
    import ray

    from components.workers import WorkerGroup
    from pipelines.console import quiet_console
    from pipelines.job import execute, prepare

    # the space checks its trials' worker group below, naming its file
    if prepare(lambda: space, WorkerGroup(), args.verbose, args.work_dir,
               args.data_root) is None:
        return 2
    try:
        space.check_cluster(ray.cluster_resources())
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    quiet_console(args.verbose)
    outcome = execute(args.experiment or f"plnlp-{source.info.name}-tune",
                      f"{source.info.name}-sweep", args.work_dir,
                      lambda work: sweep(args, space, source, work))
    if outcome is None:
        return 1
    run_id, best = outcome
    print(f"MLflow sweep run {run_id} in {mlflow.get_tracking_uri()}: best {space.metric} "
          f"{best[f'best_{space.metric}']:.4f} (trial {best['trial']}, run {best['run_id']}) "
          f"with {', '.join(f'{key}={best[key]}' for key in space.searched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
