"""The main job as a Kubeflow pipeline: load -> augment -> train -> evaluate,
each a step with typed inputs and outputs, and an optional sweep step.

    python pipelines/kubeflow.py --compile plnlp.yaml
    python pipelines/kubeflow.py --run-local --dataset ddi --preset smoke

Every step runs the same stages as ``pipelines/run.py`` (the functions of
``components/``) in a container of the image ``$PLNLP_IMAGE`` (default
``plnlp:latest``, see ``deploy/Dockerfile``), which holds this repository
installed (``pip install -e .``) with the repository as its working folder.
A step joins the Ray cluster at ``RAY_ADDRESS`` or starts a local Ray in its
pod, and train and evaluate record one MLflow run at ``MLFLOW_TRACKING_URI``.
``--run-local`` runs the steps as subprocesses here (kfp's local runner).
"""
import argparse
import logging
import os
import re
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple
from unittest import mock

from kfp import compiler, dsl, local
from kfp.dsl import Dataset, Input, Metrics, Model, Output

from pipelines.planning.arguments import add_worker_args
from pipelines.planning.run_plan import plan_run
from plnlp_core.errors import PLNLPError

REPO_ROOT = Path(__file__).resolve().parents[1]
BASE_IMAGE = os.environ.get("PLNLP_IMAGE", "plnlp:latest")
GPU = "nvidia.com/gpu"
# Given to every step as the shell that compiles (or runs) the pipeline has them.
STEP_ENV = ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "PLNLP_DATA_ROOT", "PLNLP_CACHE_DIR")
# Read from --secret's Secret into every step, each only where the Secret has it.
SECRET_KEYS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
               "RAY_AUTH_TOKEN",
               # object storage as --work-dir or --data-root: S3 or an S3-compatible store
               # (MinIO), Azure Blob
               "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
               "AWS_ENDPOINT_URL", "AWS_REGION", "AZURE_STORAGE_ACCOUNT_NAME",
               "AZURE_STORAGE_ACCOUNT_KEY")
CACHE_MOUNT = "/plnlp-cache"


# The steps. kfp ships each body to its container as source, so it imports what it uses (the
# repository is on the container's PYTHONPATH: the image's, or run_local's); the work is done
# in pipelines/kubeflow_pipeline/steps.py.

@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def load(dataset: str, data_root: str, work_dir: str, splits: Output[Dataset]) -> None:
    """Stage ``load``: the graph's canonical Parquet splits and ``meta.json``."""
    from pipelines.kubeflow_pipeline.steps import load_step

    load_step(dataset, data_root, work_dir, splits.path)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def augment(
    splits: Input[Dataset], dataset: str, preset: str, overrides: list[str], work_dir: str,
    yes: bool, walks: Output[Dataset],
) -> None:
    """Stage ``augment``: the random-walk pairs (Parquet, a folder per round),
    or, when the config walks not, an empty folder; ``num_pairs`` and
    ``rounds`` in its metadata."""
    from pipelines.kubeflow_pipeline.steps import augment_step, step_request

    request = step_request(dataset, preset, overrides, work_dir=work_dir, yes=yes)
    walked = augment_step(splits.path, request, walks.path)
    walks.metadata.update({"num_pairs": walked.num_pairs, "rounds": walked.rounds})


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def train(
    splits: Input[Dataset], walks: Input[Dataset], dataset: str, preset: str,
    overrides: list[str], work_dir: str, num_workers: int, cpus_per_worker: int, gpus: int,
    max_failures: int, experiment: str, yes: bool, model: Output[Model],
    metrics: Output[Metrics],
) -> NamedTuple("TrainOutputs", [("mlflow_run_id", str)]):
    """Stage ``train``: Ray Train's DDP workers (a GPU each when ``gpus`` > 0)
    in a new MLflow run that logs every epoch; ``model`` holds the best
    validation epoch's ``model.pt`` and the run's ``config.yaml``,
    ``metrics`` that epoch's validation metrics."""
    from components.artifacts import WalkArtifact
    from pipelines.kubeflow_pipeline.steps import step_request, train_step

    request = step_request(dataset, preset, overrides, num_workers, cpus_per_worker, gpus,
                           work_dir=work_dir, max_failures=max_failures, experiment=experiment,
                           yes=yes)
    counts = [int(walks.metadata[key]) for key in ("num_pairs", "rounds")]  # stored as floats
    walked = WalkArtifact(walks.path, *counts)
    run_id, trained = train_step(splits.path, walked, request, model.path)
    model.metadata.update({"best_epoch": trained.best_epoch, "mlflow_run_id": run_id})
    metrics.log_metric("best_epoch", trained.best_epoch)
    for key, value in trained.best_metrics.items():
        metrics.log_metric(f"best_{key}", value)
    return (run_id,)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def evaluate(
    splits: Input[Dataset], model: Input[Model], mlflow_run_id: str, experiment: str,
    metrics: Output[Metrics],
) -> None:
    """Stage ``evaluate``: OGB's Evaluator on the best checkpoint; the
    ``final_*`` metrics go to ``metrics`` and to the train step's MLflow run,
    which ends FINISHED."""
    from pipelines.kubeflow_pipeline.steps import evaluate_step

    for key, value in evaluate_step(splits.path, model.path, mlflow_run_id, experiment).items():
        metrics.log_metric(key, value)


@dsl.component(base_image=BASE_IMAGE, install_kfp_package=False)
def sweep(
    dataset: str, space: str, overrides: list[str], data_root: str, work_dir: str,
    num_samples: int, gpus: int,
) -> None:
    """The sweep: ``python pipelines/tune.py --dataset DATASET --space SPACE``
    (a path in the image, relative to the repository), ``overrides`` fixed
    for every trial; ``num_samples`` 0 takes the space's, ``gpus`` > 0 gives
    each trial's worker a GPU (the space's resources otherwise)."""
    from pathlib import Path

    from pipelines.planning.sweep_plan import SweepRequest
    from pipelines.tune import run_sweep

    request = SweepRequest(dataset, Path(space), overrides=tuple(overrides),
                           num_samples=num_samples or None, data_root=data_root or None,
                           work_dir=work_dir or None, gpus_per_worker=1 if gpus > 0 else None)
    if (code := run_sweep(request)) != 0:
        raise SystemExit(code)


class ClusterSettings:
    """What each step's pod asks of a cluster, set by ``--compile``'s flags:
    CPU and memory requests (train: its worker group plus the Ray driver;
    evaluate and sweep: one worker's CPUs; load: one CPU), a
    PersistentVolumeClaim for the stage cache (``PLNLP_CACHE_DIR``), and a
    Secret whose MLflow, Ray and S3 credentials become environment
    variables (:data:`SECRET_KEYS`, each only where the Secret has it).
    kfp's local runner ignores them."""

    def __init__(self, num_workers: int = 1, cpus_per_worker: int = 1, memory: str = "8Gi",
                 cache_volume: str | None = None, secret: str | None = None) -> None:
        self.cpus = {"load": 1, "augment": cpus_per_worker,
                     "train": num_workers * cpus_per_worker + 1, "evaluate": cpus_per_worker,
                     "sweep": cpus_per_worker + 1}
        self.memory, self.cache_volume, self.secret = memory, cache_volume, secret

    def apply(self, step: str, task: dsl.PipelineTask) -> None:
        from kfp import kubernetes

        task.set_cpu_request(str(self.cpus[step])).set_memory_request(self.memory)
        if self.cache_volume:
            kubernetes.mount_pvc(task, self.cache_volume, CACHE_MOUNT)
            task.set_env_variable("PLNLP_CACHE_DIR", CACHE_MOUNT)
        if self.secret:
            kubernetes.use_secret_as_env(task, self.secret, {key: key for key in SECRET_KEYS},
                                         optional=True)


def build_pipeline(cluster: ClusterSettings) -> object:
    """The pipeline, its steps asking ``cluster``'s resources (kfp builds
    a pipeline's spec where it is defined, hence one definition per
    setting)."""

    @dsl.pipeline(name="plnlp", description="PLNLP link prediction: load -> augment -> train -> "
                                            "evaluate, and an optional sweep.")
    def plnlp(
        dataset: str = "ddi", preset: str = "", overrides: list[str] = [],  # noqa: B006 (kfp's default)
        data_root: str = "", work_dir: str = "", experiment: str = "", num_workers: int = 1,
        cpus_per_worker: int = 1, gpus: int = 0, max_failures: int = 3, yes: bool = False,
        sweep_space: str = "", num_samples: int = 0,
    ) -> Metrics:
        """The parameters are ``pipelines/run.py``'s flags (``overrides`` its
        ``--set KEY=VALUE``; "" its defaults); ``gpus`` > 0 gives the train and
        sweep steps that many GPUs and ``--use-gpu``. A ``sweep_space`` (a
        ``tune_spaces/`` file) also runs the sweep."""
        # No step is cached by Kubeflow: the stage cache reuses what load and augment made, and
        # train, evaluate and sweep record to MLflow.
        loaded = load(dataset=dataset, data_root=data_root, work_dir=work_dir)
        splits = loaded.outputs["splits"]
        augmented = augment(splits=splits, dataset=dataset, preset=preset, overrides=overrides,
                            work_dir=work_dir, yes=yes)
        walks = augmented.outputs["walks"]
        trained = train(splits=splits, walks=walks, dataset=dataset, preset=preset,
                        overrides=overrides, work_dir=work_dir, num_workers=num_workers,
                        cpus_per_worker=cpus_per_worker, gpus=gpus, max_failures=max_failures,
                        experiment=experiment, yes=yes)
        trained.set_accelerator_type(GPU).set_accelerator_limit(gpus)
        evaluated = evaluate(splits=splits, model=trained.outputs["model"],
                             mlflow_run_id=trained.outputs["mlflow_run_id"], experiment=experiment)
        with dsl.If(sweep_space != "", name="sweep-requested"):
            searched = sweep(dataset=dataset, space=sweep_space, overrides=overrides,
                             data_root=data_root, work_dir=work_dir, num_samples=num_samples,
                             gpus=gpus)
            searched.set_accelerator_type(GPU).set_accelerator_limit(gpus)
        steps = {"load": loaded, "augment": augmented, "train": trained, "evaluate": evaluated,
                 "sweep": searched}
        for name, task in steps.items():
            task.set_caching_options(enable_caching=False)
            for variable in STEP_ENV:
                if os.environ.get(variable):
                    task.set_env_variable(variable, os.environ[variable])
            cluster.apply(name, task)
        return evaluated.outputs["metrics"]

    return plnlp


# The command line.

def parse_cli(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pipelines/kubeflow.py",
        description="Compile the PLNLP Kubeflow pipeline, or run it here with kfp's local "
                    "runner (each step a subprocess).")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--compile", metavar="FILE.yaml", type=Path,
                        help="write the pipeline's YAML, to upload to Kubeflow Pipelines")
    action.add_argument("--run-local", action="store_true", help="run the pipeline here")
    parser.add_argument("--dataset", help="as pipelines/run.py's (needed with --run-local; with "
                                          "--compile: the pipeline's default, else ddi)")
    parser.add_argument("--preset", default="",
                        help="as pipelines/run.py's (with --compile: the pipeline's default, "
                             "else paper with --use-gpu and the dataset's CPU preset without)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one setting (repeatable)")
    parser.add_argument("--data-root", default="",
                        help="folder or object-store URI holding OGB datasets (with --compile: "
                             "the pipeline's default)")
    parser.add_argument("--work-dir", default="",
                        help="folder or object-store URI (s3://bucket/prefix) for cached stage "
                             "outputs and checkpoints (with --compile: the pipeline's default)")
    parser.add_argument("--experiment", default="",
                        help="MLflow experiment (default: plnlp-<dataset>)")
    parser.add_argument("--yes", action="store_true",
                        help="run a preset made for a GPU without one")
    parser.add_argument("--sweep-space", default="",
                        help="also run pipelines/tune.py on this tune_spaces/*.yaml file")
    parser.add_argument("--num-samples", type=int, default=0,
                        help="the sweep's trials (default: the space's)")
    parser.add_argument("--memory", default="8Gi",
                        help="with --compile: memory each step's pod requests (default: 8Gi)")
    parser.add_argument("--cache-volume", metavar="PVC",
                        help="with --compile: a PersistentVolumeClaim every step mounts for the "
                             "stage cache, so load and augment outputs outlive their pods")
    parser.add_argument("--secret", metavar="NAME",
                        help="with --compile: a Kubernetes Secret whose keys "
                             f"({', '.join(SECRET_KEYS)}) become each step's environment")
    parser.add_argument("--pipeline-root", type=Path, default=Path("kfp_outputs"),
                        help="where --run-local keeps the steps' outputs (default: ./kfp_outputs)")
    add_worker_args(parser)
    return parser.parse_args(argv)


def pipeline_arguments(args: argparse.Namespace) -> dict[str, object]:
    """The pipeline's parameters from the command line, checked as
    ``pipelines/run.py`` checks them (the sweep space only for being a file:
    the sweep step checks the rest)."""
    from pipelines.kubeflow_pipeline.steps import (
        step_request,  # Ray and MLflow, once the flags parsed
    )

    if not args.dataset:
        raise PLNLPError("--run-local needs --dataset, e.g. --dataset ddi.")
    if args.num_workers < 1 or args.cpus_per_worker < 1:
        raise PLNLPError("--num-workers and --cpus-per-worker must be at least 1.")
    request = step_request(args.dataset, args.preset or "", args.overrides,
                           gpus=args.num_workers * args.use_gpu, data_root=args.data_root or "",
                           work_dir=args.work_dir or "", yes=args.yes,
                           max_failures=args.max_failures)
    source = plan_run(request).source
    space = Path(args.sweep_space).resolve() if args.sweep_space else None
    if space is not None and not space.is_file():
        raise PLNLPError(f"the sweep space {args.sweep_space} is not a file; give a "
                         "tune_spaces/*.yaml file.")
    dataset = args.dataset if source.path is None else str(source.path.resolve())
    return {"dataset": dataset, "preset": args.preset, "overrides": args.overrides,
            "data_root": _absolute(args.data_root), "work_dir": _absolute(args.work_dir),
            "experiment": args.experiment, "num_workers": args.num_workers,
            "cpus_per_worker": args.cpus_per_worker, "gpus": args.num_workers * args.use_gpu,
            "max_failures": args.max_failures, "yes": args.yes,
            "sweep_space": str(space or ""), "num_samples": args.num_samples}


def _absolute(folder: str) -> str:
    """A local folder made absolute; an object store's URI, or "", as it is."""
    return folder if not folder or "://" in folder else str(Path(folder).resolve())


def run_local(arguments: dict[str, object], pipeline_root: Path) -> dict[str, float]:
    """Runs the pipeline here, each step a subprocess of this Python with the
    repository on its ``PYTHONPATH``; returns the evaluate step's metrics.
    The steps share one Ray: ``RAY_ADDRESS``'s, else a local Ray started
    here for the run (one start instead of one per step)."""
    import ray

    from pipelines.runtime.ray_cluster import connect_ray

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(pipeline_root.resolve()))
    python_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    started = not ray.is_initialized()
    with mock.patch.dict(os.environ, {"PYTHONPATH": python_path}):  # restored afterwards
        connect_ray(logging.WARNING)  # its workers inherit the PYTHONPATH too
        os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
        try:
            with warnings.catch_warnings():  # the image's name, the GPU limit: no matter here
                warnings.filterwarnings("ignore", "You may be attemping", RuntimeWarning)
                warnings.filterwarnings("ignore", ".*no effect in the current local runner")
                return dict(build_pipeline(ClusterSettings())(**arguments).output.metadata)
        finally:
            if started:
                ray.shutdown()


def compiled_defaults(args: argparse.Namespace) -> dict[str, object]:
    """The compiled pipeline's parameter defaults, from the flags given, so
    that a run started with them can run on the pods it gets: without
    ``--use-gpu`` (pods with no GPU) a default preset made for a GPU gives
    way to the dataset's CPU preset, or is refused when it has none."""
    from pipelines.planning.presets import preset_names, preset_needs_gpu
    from plnlp_core.data.datasets import DATASETS

    dataset = args.dataset or "ddi"
    presets_of = dataset if dataset in DATASETS.names else "own"  # a graph of one's own
    preset = args.preset or ("paper" if presets_of == dataset else "default")
    defaults = {"dataset": dataset, "preset": preset, "work_dir": args.work_dir,
                "data_root": args.data_root, "yes": args.yes,
                "gpus": args.num_workers if args.use_gpu else 0}
    if args.use_gpu or args.yes or not preset_needs_gpu(presets_of, preset):
        return defaults
    on_cpus = [name for name in preset_names(presets_of)
               if not preset_needs_gpu(presets_of, name)]
    if args.preset or not on_cpus:
        raise PLNLPError(f"{dataset}'s {preset} preset needs a GPU, which the pipeline's pods get "
                         "only with --use-gpu; compile with --use-gpu, a --preset made for CPUs "
                         f"({', '.join(on_cpus) or f'{dataset} has none'}), or --yes.")
    return {**defaults, "preset": "cpu" if "cpu" in on_cpus else on_cpus[0]}


def cluster_problems(environ: Mapping[str, str], cache_volume: str | None = None,
                     work_dir: str = "") -> list[str]:
    """What a pipeline compiled with ``environ`` would get wrong on a
    cluster, one sentence each: the default image, no tracking server, a
    tracking store local to each pod (lost with it), a stage cache in no
    object storage and on no volume."""
    problems = []
    if "PLNLP_IMAGE" not in environ:
        problems.append(f"PLNLP_IMAGE is unset, so every step runs the image {BASE_IMAGE}; "
                        "set it to the image your cluster pulls (see deploy/Dockerfile).")
    uri = environ.get("MLFLOW_TRACKING_URI", "")
    if not uri:
        problems.append("MLFLOW_TRACKING_URI is unset, so each pod records to a SQLite file of "
                        "its own that is lost with it; set it to your tracking server.")
    elif not uri.startswith(("http://", "https://", "databricks")):
        problems.append(f"MLFLOW_TRACKING_URI={uri} is a store on this machine, which no pod "
                        "sees; set it to your tracking server.")
    if cache_volume is None and "://" not in work_dir:
        problems.append("no --work-dir in object storage and no --cache-volume, so each pod "
                        "caches its stage outputs where they are lost with it, and every run "
                        "loads and walks the graph again; give --work-dir s3://<bucket>/plnlp "
                        "(its keys through --secret) or a PersistentVolumeClaim every step can "
                        "mount.")
    return problems


def main(argv: list[str] | None = None) -> int:
    args = parse_cli(argv)
    if args.compile is not None:
        cluster = ClusterSettings(args.num_workers, args.cpus_per_worker, args.memory,
                                  args.cache_volume, args.secret)
        try:
            defaults = compiled_defaults(args)
        except PLNLPError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        compiler.Compiler().compile(build_pipeline(cluster), str(args.compile),
                                    pipeline_parameters=defaults)
        print(f"pipeline written to {args.compile} (image {BASE_IMAGE}); runs with the defaults "
              f"train {defaults['dataset']}'s {defaults['preset']} preset")
        for problem in cluster_problems(os.environ, args.cache_volume, args.work_dir):
            print(f"warning: {problem}", file=sys.stderr)
        return 0
    try:
        arguments = pipeline_arguments(args)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        metrics = run_local(arguments, args.pipeline_root)
    except PLNLPError as error:  # RAY_ADDRESS refused
        print(f"error: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:  # kfp's local runner: a step failed, its lines are above
        reason = re.sub(r"\x1b\[[0-9;]*m", "", str(error).strip().splitlines()[0])  # colours
        print(f"error: {reason}", file=sys.stderr)
        return 1
    print("pipeline finished; " + "  ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
