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

The pipeline lives in ``pipelines/runtime/kubeflow/``: the steps
(``kfp_components.py``, their work in ``steps.py``), what the pods ask of a
cluster (``cluster.py``), the graph (``graph.py``) and the local runner
(``local_run.py``); this module is the command.
"""
import argparse
import os
import re
import sys
from pathlib import Path

from components.storage.location import Location, is_uri
from pipelines.planning.arguments import add_request_args, add_worker_args, shared_request
from pipelines.planning.run_plan import plan_run
from pipelines.runtime.kubeflow.cluster import (
    BASE_IMAGE,
    SECRET_KEYS,
    ClusterSettings,
    cluster_problems,
)
from plnlp_core.errors import PLNLPError


def parse_cli(argv: list[str] | None = None) -> argparse.Namespace:
    """The command's flags: ``--compile`` or ``--run-local``, the pipeline's
    parameters (``pipelines/run.py``'s flags, shared with it through
    :func:`~pipelines.planning.arguments.add_request_args`) and the pods'
    requests."""
    parser = argparse.ArgumentParser(
        prog="pipelines/kubeflow.py",
        description="Compile the PLNLP Kubeflow pipeline, or run it here with kfp's local "
                    "runner (each step a subprocess).")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--compile", metavar="FILE.yaml", type=Path,
                        help="write the pipeline's YAML, to upload to Kubeflow Pipelines")
    action.add_argument("--run-local", action="store_true", help="run the pipeline here")
    add_request_args(
        parser,
        dataset="as pipelines/run.py's (needed with --run-local; with --compile: the pipeline's "
                "default, else ddi)",
        preset="as pipelines/run.py's (with --compile: the pipeline's default, else paper with "
               "--use-gpu and the dataset's CPU preset without)",
        data_root="folder or object-store URI holding OGB datasets (with --compile: the "
                  "pipeline's default)",
        work_dir="folder or object-store URI (s3://bucket/prefix) for cached stage outputs and "
                 "checkpoints (with --compile: the pipeline's default)",
        yes="run a preset made for a GPU without one")
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
    add_worker_args(parser, cpus_per_worker=1)  # each step's pod is sized by it
    return parser.parse_args(argv)


def pipeline_arguments(args: argparse.Namespace) -> dict[str, object]:
    """The pipeline's parameters from the command line, checked as
    ``pipelines/run.py`` checks them (the sweep space only for being a file:
    the sweep step checks the rest)."""
    if not args.dataset:
        raise PLNLPError("--run-local needs --dataset, e.g. --dataset ddi.")
    if args.num_workers < 1 or args.cpus_per_worker < 1:
        raise PLNLPError("--num-workers and --cpus-per-worker must be at least 1.")
    request = shared_request(args)
    source = plan_run(request).source
    space = Path(args.sweep_space).resolve() if args.sweep_space else None
    if space is not None and not space.is_file():
        raise PLNLPError(f"the sweep space {args.sweep_space} is not a file; give a "
                         "tune_spaces/*.yaml file.")
    dataset = request.dataset if source.path is None else str(source.path.resolve())
    workers = request.workers
    return {"dataset": dataset, "preset": request.preset or "",
            "overrides": list(request.overrides), "data_root": _absolute(request.data_root),
            "work_dir": _absolute(request.work_dir), "experiment": request.experiment or "",
            "num_workers": workers.num_workers, "cpus_per_worker": workers.cpus_per_worker,
            "gpus": workers.num_workers * workers.use_gpu, "max_failures": request.max_failures,
            "yes": request.yes, "sweep_space": str(space or ""), "num_samples": args.num_samples}


def _absolute(folder: str | None) -> str:
    """A local folder (or ``file://`` URI) as an absolute path; an object
    store's URI as it is; none as ""."""
    if not folder:
        return ""
    return folder if is_uri(folder) else Location(folder).uri


def compiled_defaults(args: argparse.Namespace) -> dict[str, object]:
    """The compiled pipeline's parameter defaults, from the flags given, so
    that a run started with them can run on the pods it gets: without
    ``--use-gpu`` (pods with no GPU) a default preset made for a GPU gives
    way to the dataset's CPU preset, or is refused when it has none."""
    from pipelines.planning.presets import (
        default_preset,
        preset_names,
        preset_needs_gpu,
        presets_file,
    )
    from plnlp_core.data.datasets import DATASETS

    dataset = args.dataset or "ddi"
    own_graph = dataset not in DATASETS.names  # its path, which need not be here
    presets_of = presets_file(dataset, own_graph)
    preset = args.preset or default_preset(own_graph, dataset=dataset)
    defaults = {"dataset": dataset, "preset": preset, "work_dir": args.work_dir or "",
                "data_root": args.data_root or "", "yes": args.yes,
                "gpus": args.num_workers if args.use_gpu else 0,
                "overrides": list(args.overrides)}
    if args.use_gpu or args.yes or not preset_needs_gpu(presets_of, preset):
        return defaults
    on_cpus = [name for name in preset_names(presets_of)
               if not preset_needs_gpu(presets_of, name)]
    if args.preset or not on_cpus:
        raise PLNLPError(f"{dataset}'s {preset} preset needs a GPU, which the pipeline's pods get "
                         "only with --use-gpu; compile with --use-gpu, a --preset made for CPUs "
                         f"({', '.join(on_cpus) or f'{dataset} has none'}), or --yes.")
    return {**defaults, "preset": "cpu" if "cpu" in on_cpus else on_cpus[0]}


def compile_pipeline(args: argparse.Namespace) -> int:
    """Writes the pipeline ``--compile`` names, with warnings about what the
    cluster would get wrong; the exit code."""
    from kfp import compiler  # once the flags parsed

    from pipelines.runtime.kubeflow.graph import build_pipeline

    cluster = ClusterSettings(args.num_workers, args.cpus_per_worker, args.memory,
                              args.cache_volume, args.secret)
    try:
        defaults = compiled_defaults(args)
        image_needs = parts_in_image(defaults["overrides"])
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    compiler.Compiler().compile(build_pipeline(cluster), str(args.compile),
                                pipeline_parameters=defaults)
    print(f"pipeline written to {args.compile} (image {BASE_IMAGE}); runs with the defaults "
          f"train {defaults['dataset']}'s {defaults['preset']} preset")
    for problem in [*cluster_problems(os.environ, args.cache_volume, args.work_dir or ""),
                    *image_needs]:
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def parts_in_image(overrides: list[str]) -> list[str]:
    """What the pipeline's image must hold for the parts of one's own the
    ``--set``s name, one sentence each (the steps import them there)."""
    from pipelines.planning.presets import parse_overrides
    from plnlp_core.choices import PART_KINDS
    from plnlp_core.parts.import_path import is_import_path

    settings = parse_overrides(overrides)
    return [f"the steps import {kind} {settings[kind]}, so the image "
            f"{os.environ.get('PLNLP_IMAGE', BASE_IMAGE)} must hold its package (installed, or "
            "under the image's working folder; docs/kubernetes.md)."
            for kind in PART_KINDS if is_import_path(settings.get(kind))]


def main(argv: list[str] | None = None) -> int:
    """Compiles the pipeline or runs it here; the exit code (2: refused, 1:
    a step failed)."""
    args = parse_cli(argv)
    if args.compile is not None:
        return compile_pipeline(args)
    try:
        arguments = pipeline_arguments(args)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    # the pipeline's steps and kfp's runner, once the flags are checked
    from pipelines.runtime.kubeflow.local_run import run_local

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
