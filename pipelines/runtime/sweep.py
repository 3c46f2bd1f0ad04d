"""The sweep's run: one Ray Tune trial per sampled config, each a whole
augment -> train -> evaluate run recorded as a child MLflow run of one sweep
run; each trial reports every evaluated epoch to Tune, so that an ASHA
scheduler stops weak ones early. :func:`run_sweep` runs a
:class:`~pipelines.planning.request.SweepPlan` (``pipelines/tune.py``'s, and
the Kubeflow sweep step's): it checks the MLflow store, starts or joins Ray,
checks that the cluster holds a trial, loads the graph once, packs trials
onto GPUs when asked (:mod:`pipelines.planning.gpu_packing`) and runs them
in the sweep's MLflow run. An interrupted sweep's run holds the trials that
ended, summarised, and its Ray Tune state (``tune/<run id>`` under the work
folder, else under the cache until the sweep finishes), which ``--resume``
goes on from. Ray, Tune and MLflow are imported inside the functions."""
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from components.recording.tags import SEARCH_SPACE_FILE, TUNE_STATE_TAG
from pipelines.planning.request import SweepPlan
from pipelines.planning.sweep_plan import check_cluster
from pipelines.planning.sweep_space import SearchSpace
from pipelines.runtime.collection_pause import start_without_collections
from plnlp_core.errors import PLNLPError

if TYPE_CHECKING:
    from components.storage.location import Location

# A trial of several workers only waits on its Train worker group, which holds
# the cores: it holds no CPU (Tune takes no empty request, hence a token of memory).
GROUP_TRIAL_RESOURCES = {"CPU": 0, "memory": 64 << 20}
# The GPU share of the task that reads a GPU's memory for --trials-per-gpu.
GPU_PROBE_SHARE = 0.001
# Ray Tune's choice of console (1: its newer one).
TUNE_CONSOLE = "RAY_AIR_NEW_OUTPUT"
# What Ray Tune logs as it stops for an interrupt, which the command says its own way.
TUNE_INTERRUPT_NOTES = ("Stop signal received", "Experiment has been interrupted",
                        "Trials did not complete")


# The sweep's modules (Tune, torch, PyG, MLflow's client, the stages): imported while Ray starts
SWEEP_MODULES = ("pipelines.runtime.job", "ray.tune", "components.sweep.trial",
                 "components.heart", "components.recording.sweep_records",
                 "pipelines.runtime.load_stage")


def tune_state(work_dir: "Location | None", run_id: str) -> "Location":
    """Where a new sweep keeps its Ray Tune state: ``tune/<run id>`` under
    ``work_dir``, else under the cache, beside the runs' checkpoints."""
    from components.storage.location import Location
    from plnlp_core.data.datasets import cache_dir

    return (work_dir or Location(cache_dir())) / "tune" / run_id


def sweep(plan: SweepPlan) -> object:
    """Loads the graph once, runs the trials (or, with ``--resume``, the
    ones that had not ended), closes their child runs and logs the sweep's
    summary to its run; returns the best trial's row. An interrupt leaves
    the run the summary of the trials that ended."""
    from ray import tune

    from components.heart import heart_stage
    from components.recording.reads import active_run_info, get_run, tracking_uri
    from components.recording.run_lifecycle import tag_run, untag_run
    from components.recording.run_records import log_config, log_sources, log_text
    from components.storage.location import Location
    from components.sweep.trial import SweepTrial
    from pipelines.planning.gpu_packing import pack_trials
    from pipelines.runtime.load_stage import load_stage
    from pipelines.runtime.storage_roots import StorageRoots

    request, source = plan.request, plan.source
    parent = active_run_info()
    roots = StorageRoots.of(request.work_dir, request.data_root)
    dataset = load_stage(source, request.graph, roots)
    if request.trials_per_gpu is not None:
        resources, packing = pack_trials(request.trials_per_gpu, plan.space, dataset.meta,
                                         gpu_memory_bytes())
        print(packing, flush=True)
        plan = plan.with_resources(resources)
    space = plan.space
    if request.resume is None:
        log_config(space.base, space.describe(), exclude=space.searched)
        log_text(request.space.read_text(), SEARCH_SPACE_FILE)
        log_sources(source.label, *roots.sources())
    heart = heart_stage(dataset, space.base, space.resources.cpus_per_worker)  # for every trial
    options = {"tracking_uri": tracking_uri(), "metric": space.metric, "heart": heart,
               "checkpoints": roots.checkpoints,
               "max_failures": request.max_failures, "parent_run_id": parent.run_id,
               "experiment_id": parent.experiment_id, "workers": space.resources.worker_group(),
               "decision_epochs": space.decision_epochs(), "params": space.trial_params()}
    trainable = tune.with_resources(
        tune.with_parameters(SweepTrial, base=space.base.to_dict(), dataset=dataset,
                             options=options), trial_resources(space))
    if request.resume is not None:  # failed trials stay failed, as the trials' table has them
        state = Location(get_run(parent.run_id).data.tags[TUNE_STATE_TAG])  # the tag's URI
        path, filesystem = state.ray_storage()
        tuner = tune.Tuner.restore(path, trainable, resume_unfinished=True,
                                   resume_errored=False, restart_errored=False,
                                   storage_filesystem=filesystem)
    else:  # from here on, an interrupt leaves a sweep that --resume goes on with
        state = tune_state(roots.work, parent.run_id)
        tag_run(TUNE_STATE_TAG, state.uri)
        tuner = new_tuner(space, trainable, state, parent.run_id, request.verbose,
                          request.max_failures)
    fit(tuner, space, parent, request.verbose)
    best = summarise(space, parent, finished=True)
    if state == tune_state(None, parent.run_id):  # the cache keeps no finished sweep's state
        state.remove()
        untag_run(TUNE_STATE_TAG)
    if request.register is not None:
        from components.recording.model_export import register_link_model

        print(register_link_model(best["run_id"], request.register, f"final_{space.metric}"),
              flush=True)
    return best


def gpu_memory_bytes() -> int:
    """The total memory of a GPU of the cluster, read by a task holding a
    sliver of one (:data:`GPU_PROBE_SHARE`), so that it runs beside whatever
    holds the GPU."""
    import ray

    return ray.get(ray.remote(_device_memory).options(num_gpus=GPU_PROBE_SHARE).remote())


def _device_memory() -> int:
    import torch

    return torch.cuda.get_device_properties(0).total_memory


def trial_resources(space: SearchSpace) -> dict[str, float]:
    """What a trial's actor holds: a trial of one worker trains in it (its
    CPUs and GPU share, see :mod:`components.train.trial_training`); a
    larger one starts a Train worker group, which holds them."""
    group = space.resources.worker_group()
    return group.per_worker() if group.num_workers == 1 else GROUP_TRIAL_RESOURCES


def new_tuner(space: SearchSpace, trainable: object, state: "Location", run_id: str,
              verbose: bool, max_failures: int) -> object:
    """Ray Tune's tuner of a new sweep, keeping its state in ``state``; its
    callback records each trial's outcome on the trial's run (see
    :class:`components.recording.sweep_records.TrialOutcomes`), and Tune saves it with
    its state for ``--resume``. A trial that trains in its own actor and
    fails is restarted up to ``max_failures`` times, going on from its
    newest checkpoint (a Train worker group restarts its own workers)."""
    import ray
    from ray import tune

    from components.recording.run_records import log_config
    from components.recording.sweep_records import TrialOutcomes
    from pipelines.runtime.job import describe_failure

    storage_path, storage_filesystem = state.parent.ray_storage()
    outcomes = TrialOutcomes(describe_failure, space.metric, run_id, lambda settings: log_config(
        space.base.replace(**settings), space.trial_params()))
    return tune.Tuner(
        trainable, param_space=space.param_space(),
        tune_config=tune.TuneConfig(
            metric=space.metric, mode=space.mode, search_alg=space.search_algorithm(),
            scheduler=space.scheduler(), num_samples=space.num_samples,
            max_concurrent_trials=space.concurrency(ray.cluster_resources()),
            reuse_actors=True),  # see SweepTrial.reset_config
        run_config=tune.RunConfig(
            name=state.name, storage_path=storage_path, storage_filesystem=storage_filesystem,
            callbacks=[outcomes],
            verbose=1 if verbose else 0,
            failure_config=tune.FailureConfig(
                max_failures=max_failures if space.resources.workers == 1 else 0)))


def fit(tuner: object, space: SearchSpace, run: object, verbose: bool) -> None:
    """Runs the trials of the sweep's ``run`` (its MLflow ``RunInfo``). The
    first SIGINT or SIGTERM lets Tune save its state and stop them (see
    :func:`pipelines.runtime.interrupts.library_stops_first`), then the trials that
    ended are summarised and the interrupt goes on."""
    from pipelines.runtime.interrupts import library_stops_first

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
    from components.recording.sweep_records import close_trial_runs, log_sweep_summary, trial_table

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


def run_sweep(plan: SweepPlan, own_process: bool = False) -> int:
    """Runs the sweep ``plan`` (the command's, and the Kubeflow sweep
    step's); returns the command's exit code: 2 refused, 1 failed. Its
    start runs without garbage collections, frozen after it in the
    command's ``own_process`` (:mod:`pipelines.runtime.collection_pause`)."""
    request = plan.request
    with start_without_collections(own_process):
        import ray

        from components.recording.reads import get_run, tracking_uri
        from components.train.worker_group import WorkerGroup
        from pipelines.runtime.console import quiet_console, runs_table_page, ui_link
        from pipelines.runtime.services import prepare

        # the space checks its trials' worker group below, naming its file
        if prepare(lambda: plan, WorkerGroup(), request.verbose, request.work_dir,
                   request.data_root, beside=SWEEP_MODULES) is None:
            return 2
        from pipelines.runtime.job import execute  # loaded beside Ray
    try:
        check_cluster(plan, ray.cluster_resources())
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    quiet_console(request.verbose)
    outcome = execute(plan.experiment, plan.run_name, request.work_dir,
                      lambda work: sweep(plan), run_id=plan.run_id, verbose=request.verbose)
    if outcome is None:
        return 1
    run_id, best = outcome
    space = plan.space
    print(f"MLflow sweep run {run_id} in {tracking_uri()}: best {space.metric} "
          f"{best[f'best_{space.metric}']:.4f} (run {best['run_id']}) "
          f"with {', '.join(f'{key}={best[key]}' for key in space.searched)}")
    trials = runs_table_page(get_run(run_id).info.experiment_id,
                             space.metric.removeprefix("valid_"), parent_run_id=run_id)
    print(f"  its trials, best first: {ui_link(trials)[1]}", flush=True)
    return 0
