"""The sweep: one Ray Tune trial per sampled config, each a whole
augment -> train -> evaluate run recorded as a child MLflow run of one sweep
run; each trial reports every evaluated epoch to Tune, so that an ASHA
scheduler stops weak ones early.

    python pipelines/tune.py --dataset ddi --space tune_spaces/ablation.yaml
    python pipelines/tune.py --dataset ddi --resume <sweep run id>

Search spaces are data (``tune_spaces/*.yaml``, see
:mod:`pipelines.sweep_space`); trials are compared by a validation metric.
An interrupted sweep's run holds the trials that ended, summarised, and
``--resume`` goes on with the others in the same run, from Ray Tune's state
(``tune/<run id>`` under ``--work-dir``, else under the cache until the sweep
finishes).
"""
import argparse
import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.arguments import add_graph_args, add_register_arg, graph_flags
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
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError

if TYPE_CHECKING:
    from components.storage import Location

# A trial only waits on its Train workers, which hold the cores: it holds no
# CPU (Tune takes no empty request, hence a token of memory).
TRIAL_RESOURCES = {"CPU": 0, "memory": 64 << 20}
# A sweep's run, while it can go on: where its Ray Tune state lives.
TUNE_STATE_TAG = "plnlp.tune_state"
# What the sweep's own settings are; --resume takes the sweep's.
SWEEP_FLAGS = {"overrides": "--set", "num_samples": "--num-samples",
               "max_concurrent": "--max-concurrent", "num_workers": "--num-workers",
               "cpus_per_worker": "--cpus-per-worker", "gpus_per_worker": "--gpus-per-worker",
               "experiment": "--experiment"}
# Ray Tune's choice of console (1: its newer one).
TUNE_CONSOLE = "RAY_AIR_NEW_OUTPUT"
# What Ray Tune logs as it stops for an interrupt, which the command says its own way.
TUNE_INTERRUPT_NOTES = ("Stop signal received", "Experiment has been interrupted",
                        "Trials did not complete")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines/tune.py",
                                     description="Sweep PLNLP settings with Ray Tune.")
    parser.add_argument("--dataset", required=True,
                        help=f"one of {', '.join(DATASETS.names)}, or the path of your edge list "
                             "or split folder (see pipelines/run.py --help)")
    sweep_of = parser.add_mutually_exclusive_group(required=True)
    sweep_of.add_argument("--space", type=Path, help="a tune_spaces/*.yaml file")
    sweep_of.add_argument("--resume", metavar="RUN_ID",
                          help="go on with an interrupted sweep (its MLflow run id), keeping "
                               "the trials that ended; give the same --dataset, --data-root "
                               "and --work-dir")
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


def check_resume_flags(args: argparse.Namespace) -> None:
    """Refuses, with ``--resume``, the flags that set what the sweep set."""
    given = [flag for key, flag in SWEEP_FLAGS.items() if getattr(args, key)]
    if args.resume is not None and given:
        raise PLNLPError(f"--resume goes on with the sweep's own settings; drop "
                         f"{', '.join(given)}.")


def planned_sweep(args: argparse.Namespace, source: GraphSource,
                  space: SearchSpace | None) -> tuple[SearchSpace, str]:
    """The sweep to run and its MLflow experiment: ``space``, read from
    ``--space``, or the sweep ``--resume`` names (:func:`resumed_sweep`)."""
    if space is None:
        return resumed_sweep(args, source)
    return space, args.experiment or f"plnlp-{source.info.name}-tune"


def resumed_sweep(args: argparse.Namespace, source: GraphSource) -> tuple[SearchSpace, str]:
    """Looks ``--resume`` up: a sweep's run of this tracking store (which
    must exist: reading one creates it) that swept ``source``'s graph, has
    not finished and still has its Ray Tune state. Returns its search space,
    rebuilt from what the run recorded, and its experiment's name."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient
    from ray import tune

    from pipelines.services import check_store_exists

    check_store_exists(mlflow.get_tracking_uri())
    client = MlflowClient()
    try:
        run = client.get_run(args.resume)
    except MlflowException as error:
        raise PLNLPError(f"there is no MLflow run {args.resume} at {mlflow.get_tracking_uri()}; "
                         "give --resume the id of a sweep run of this tracking store (see "
                         "mlflow ui), or set MLFLOW_TRACKING_URI to the store that holds "
                         "it.") from error
    params = run.data.params
    if "searched" not in params:
        raise PLNLPError(f"run {args.resume} is not a sweep; give --resume the sweep's run (a "
                         "trial's parent), or go on with a single run with pipelines/run.py "
                         "--resume.")
    if params.get("dataset") != source.info.name:
        raise PLNLPError(f"sweep {args.resume} swept {params.get('dataset')}, not "
                         f"{source.info.name}; resume it with --dataset {params.get('dataset')}.")
    if run.info.status == "FINISHED":
        raise PLNLPError(f"sweep {args.resume} has already finished; start a new sweep instead "
                         "of --resume.")
    state = run.data.tags.get(TUNE_STATE_TAG)
    if state is None or not tune.Tuner.can_restore(state):
        raise PLNLPError(f"sweep {args.resume} cannot go on: its Ray Tune state is gone "
                         f"({state or 'the sweep recorded none'}); start a new sweep.")
    return recorded_space(client, run, source), \
        client.get_experiment(run.info.experiment_id).name


def recorded_space(client: object, run: object, source: GraphSource) -> SearchSpace:
    """A sweep's search space as its run recorded it: the file, the counts
    and resources the command line set, and the settings not searched."""
    import yaml

    params = run.data.params
    with tempfile.TemporaryDirectory() as folder:
        data = read_mapping(Path(client.download_artifacts(
            run.info.run_id, "search_space.yaml", folder)), "search space")
        settings = yaml.safe_load(Path(client.download_artifacts(
            run.info.run_id, "config.yaml", folder)).read_text())
    data["num_samples"] = int(params["num_samples"])
    if params["max_concurrent"] != "cluster":
        data["max_concurrent"] = int(params["max_concurrent"])
    resources = {"workers": int(params["trial_workers"]),
                 "cpus_per_worker": int(params["trial_cpus_per_worker"]),
                 "gpus_per_worker": float(params["trial_gpus_per_worker"])}
    return SearchSpace(Path(params["search_space"]), PLNLPConfig.from_mapping(settings),
                       source.info, data, resources)


def tune_state(work_dir: str | None, run_id: str) -> "Location":
    """Where a new sweep keeps its Ray Tune state: ``tune/<run id>`` under
    ``work_dir``, else under the cache, beside the runs' checkpoints."""
    from components.storage import location
    from plnlp_core.data.datasets import cache_dir

    return location(work_dir or cache_dir()) / "tune" / run_id


def sweep(args: argparse.Namespace, space: SearchSpace, source: GraphSource) -> object:
    """Loads the graph once, runs the trials (or, with ``--resume``, the
    ones that had not ended), closes their child runs and logs the sweep's
    summary to its run; returns the best trial's row. An interrupt leaves
    the run the summary of the trials that ended."""
    import mlflow
    from ray import tune

    from components.checkpoints import checkpoint_root
    from components.storage import location
    from components.sweep_trial import SweepTrial
    from components.tracking import log_config
    from pipelines.load_stage import load_stage

    parent = mlflow.active_run().info
    if args.resume is None:
        log_config(space.base, space.describe(), exclude=space.searched)
        mlflow.log_text(args.space.read_text(), "search_space.yaml")
    dataset = load_stage(source, graph_flags(args), args.data_root, args.work_dir)
    options = {"tracking_uri": mlflow.get_tracking_uri(), "metric": space.metric,
               "checkpoints": checkpoint_root(args.work_dir).uri,
               "max_failures": args.max_failures, "parent_run_id": parent.run_id,
               "experiment_id": parent.experiment_id, "workers": space.resources.worker_group(),
               "decision_epochs": space.decision_epochs()}
    trainable = tune.with_resources(
        tune.with_parameters(SweepTrial, base=space.base.to_dict(), dataset=dataset,
                             options=options), TRIAL_RESOURCES)
    if args.resume is not None:  # failed trials stay failed, as the trials' table has them
        state = location(mlflow.get_run(parent.run_id).data.tags[TUNE_STATE_TAG])
        tuner = tune.Tuner.restore(state.uri, trainable, resume_unfinished=True,
                                   resume_errored=False, restart_errored=False)
    else:  # from here on, an interrupt leaves a sweep that --resume goes on with
        state = tune_state(args.work_dir, parent.run_id)
        mlflow.set_tag(TUNE_STATE_TAG, state.uri)
        tuner = new_tuner(space, trainable, state, parent.run_id, args.verbose)
    fit(tuner, space, parent, args.verbose)
    best = summarise(space, parent, finished=True)
    if state == tune_state(None, parent.run_id):  # the cache keeps no finished sweep's state
        state.remove()
        mlflow.delete_tag(TUNE_STATE_TAG)
    if args.register is not None:
        from components.model_registry import register_link_model

        print(register_link_model(best["run_id"], args.register, f"final_{space.metric}"),
              flush=True)
    return best


def new_tuner(space: SearchSpace, trainable: object, state: "Location", run_id: str,
              verbose: bool) -> object:
    """Ray Tune's tuner of a new sweep, keeping its state in ``state``; its
    callback records each trial's outcome on the trial's run (see
    :class:`components.sweep_tracking.TrialOutcomes`), and Tune saves it with
    its state for ``--resume``."""
    import ray
    from ray import tune

    from components.sweep_tracking import TrialOutcomes
    from components.tracking import log_config
    from pipelines.job import describe_failure

    workers = asdict(space.resources.worker_group())
    outcomes = TrialOutcomes(describe_failure, space.metric, run_id, lambda settings: log_config(
        space.base.replace(**settings), workers))
    return tune.Tuner(
        trainable, param_space=space.param_space(),
        tune_config=tune.TuneConfig(
            metric=space.metric, mode=space.mode, search_alg=space.search_algorithm(),
            scheduler=space.scheduler(), num_samples=space.num_samples,
            max_concurrent_trials=space.concurrency(ray.cluster_resources())),
        run_config=tune.RunConfig(storage_path=state.parent.uri, name=state.name,
                                  callbacks=[outcomes], verbose=1 if verbose else 0))


def fit(tuner: object, space: SearchSpace, run: object, verbose: bool) -> None:
    """Runs the trials of the sweep's ``run`` (its MLflow ``RunInfo``). The
    first SIGINT or SIGTERM lets Tune save its state and stop them (see
    :func:`pipelines.interrupts.library_stops_first`), then the trials that
    ended are summarised and the interrupt goes on."""
    from pipelines.interrupts import library_stops_first

    try:
        with quiet_tune(verbose), library_stops_first():
            tuner.fit()
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):  # a store gone meanwhile: the interrupt says so
            summarise(space, run, finished=False)
        raise


@contextlib.contextmanager
def quiet_tune(verbose: bool) -> Iterator[None]:
    """Keeps Ray Tune's own console output off for the block unless
    ``verbose``: its newer console prints a table as it starts whatever the
    verbosity (the older one, chosen here, prints nothing at 0), and the
    notes it logs as it stops for an interrupt, which the command says its
    own way. The trials' own lines are printed as they end."""
    if verbose:
        yield
        return
    notes, quiet = logging.getLogger("ray.tune.tune"), TuneInterruptNotes()
    notes.addFilter(quiet)
    engine = os.environ.get(TUNE_CONSOLE)
    os.environ[TUNE_CONSOLE] = "0"
    try:
        yield
    finally:
        notes.removeFilter(quiet)
        if engine is None:
            del os.environ[TUNE_CONSOLE]
        else:
            os.environ[TUNE_CONSOLE] = engine


class TuneInterruptNotes(logging.Filter):
    """Drops what Tune logs as it stops for an interrupt."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(TUNE_INTERRUPT_NOTES)


def summarise(space: SearchSpace, run: object, finished: bool) -> object:
    """Closes the runs of the trials that ended and logs their summary to
    the sweep's ``run`` (its MLflow ``RunInfo``); returns the best trial's
    row. A finished sweep none of whose trials was evaluated fails, with
    the first failure's reason."""
    from components.sweep_tracking import close_trial_runs, log_sweep_summary, trial_table

    outcomes, run_ids = close_trial_runs(run.run_id)
    table = trial_table(outcomes, run_ids, space.metric, space.mode)
    best = None if table.empty else log_sweep_summary(
        table, list(space.searched), space.metric, space.mode, run.run_name, finished)
    if not finished:
        return best
    if best is None:
        reasons = [o.reason for o in outcomes.values() if o.reason]
        raise PLNLPError(f"no trial was evaluated; the first failed with: "
                         f"{reasons[0] if reasons else 'no reason given'}")
    print_sweep_summary(table)
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
        check_resume_flags(args)
        source = graph_source(args)
        space = read_space(args, source) if args.resume is None else None
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    import mlflow
    import ray

    from components.workers import WorkerGroup
    from pipelines.console import quiet_console
    from pipelines.job import execute, prepare

    # the space checks its trials' worker group below, naming its file
    swept = prepare(lambda: planned_sweep(args, source, space), WorkerGroup(), args.verbose,
                    args.work_dir, args.data_root)
    if swept is None:
        return 2
    space, experiment = swept
    try:
        space.check_cluster(ray.cluster_resources())
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    quiet_console(args.verbose)
    outcome = execute(experiment, f"{source.info.name}-sweep", args.work_dir,
                      lambda work: sweep(args, space, source), run_id=args.resume)
    if outcome is None:
        return 1
    run_id, best = outcome
    print(f"MLflow sweep run {run_id} in {mlflow.get_tracking_uri()}: best {space.metric} "
          f"{best[f'best_{space.metric}']:.4f} (trial {best['trial']}, run {best['run_id']}) "
          f"with {', '.join(f'{key}={best[key]}' for key in space.searched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
