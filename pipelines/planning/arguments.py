"""The command lines' flags, and the one place that turns them into a
request: ``pipelines/run.py``'s into a :class:`RunRequest` (planned by
:func:`pipelines.planning.run_plan.plan_run`), ``pipelines/tune.py``'s into a
:class:`SweepRequest` (planned by :func:`pipelines.planning.sweep_plan.plan_sweep`);
and the run's flags that ``pipelines/kubeflow.py`` shares with ``run.py``
(:func:`add_request_args`, :func:`add_worker_args`), which
:func:`shared_request` makes a request of. Nothing here imports torch, Ray
or MLflow, so ``--help`` answers at once."""
import argparse
import dataclasses
from pathlib import Path

from components.train.worker_group import WorkerGroup
from pipelines.planning.request import GraphFlags, RunRequest, SweepRequest
from plnlp_core.choices import DEFAULT_SPLIT, HEURISTIC_CHOICES, NCN_SPLIT
from plnlp_core.data.datasets import DATASETS


def run_request(argv: list[str] | None = None) -> RunRequest:
    """``pipelines/run.py``'s flags in ``argv`` (default: the command line's)."""
    parser = run_parser()
    args = parser.parse_args(argv)
    if args.dataset is None and args.resume is None:
        parser.error("the following arguments are required: --dataset (or --resume RUN_ID)")
    return dataclasses.replace(
        shared_request(args), config_file=args.config, model=args.model, runs=args.runs,
        seed=args.seed, graph=graph_flags(args), resume=args.resume, register=args.register,
        verbose=args.verbose)


def shared_request(args: argparse.Namespace) -> RunRequest:
    """The request the flags of :func:`add_request_args` and
    :func:`add_worker_args` make (``pipelines/kubeflow.py``'s, and the
    part of ``pipelines/run.py``'s they are): the other fields their
    defaults."""
    return RunRequest(
        dataset=args.dataset, preset=args.preset, overrides=tuple(args.overrides),
        workers=worker_group(args), max_failures=args.max_failures,
        experiment=args.experiment, data_root=args.data_root, work_dir=args.work_dir,
        yes=args.yes)


def run_parser() -> argparse.ArgumentParser:
    """``pipelines/run.py``'s flags."""
    parser = argparse.ArgumentParser(
        prog="pipelines/run.py",
        description="Train and evaluate a PLNLP link predictor on an OGB dataset or a graph of "
                    "your own, on Ray, recording to MLflow.",
    )
    add_request_args(parser)
    parser.add_argument("--config", type=Path, help="a YAML mapping of settings to override")
    parser.add_argument("--model", default="plnlp",
                        help="plnlp (default), or a classic heuristic scoring the same pairs: "
                             + ", ".join(f"heuristic:{name}" for name in HEURISTIC_CHOICES))
    parser.add_argument("--runs", type=int, default=1, help="independent runs (seeds S..S+N-1)")
    parser.add_argument("--seed", type=int, help="first seed (default: the config's)")
    add_graph_args(parser)
    add_worker_args(parser)
    parser.add_argument("--resume", metavar="RUN_ID",
                        help="go on with a stopped or failed run (its MLflow run id) from its "
                             "latest checkpoint, in its experiment, with its settings, dataset, "
                             "data root and work folder (--set may change epochs)")
    add_register_arg(parser)
    parser.add_argument("--verbose", action="store_true",
                        help="show Ray's and MLflow's own progress lines too")
    return parser


def sweep_request(argv: list[str] | None = None) -> SweepRequest:
    """``pipelines/tune.py``'s flags in ``argv`` (default: the command line's)."""
    parser = sweep_parser()
    args = parser.parse_args(argv)
    if args.dataset is None and args.resume is None:
        parser.error("the following arguments are required: --dataset (or --resume RUN_ID)")
    return SweepRequest(
        dataset=args.dataset, space=args.space, resume=args.resume,
        overrides=tuple(args.overrides), num_samples=args.num_samples,
        max_concurrent=args.max_concurrent, num_workers=args.num_workers,
        cpus_per_worker=args.cpus_per_worker, gpus_per_worker=args.gpus_per_worker,
        trials_per_gpu=args.trials_per_gpu, max_failures=args.max_failures,
        experiment=args.experiment, data_root=args.data_root, work_dir=args.work_dir,
        register=args.register, graph=graph_flags(args), verbose=args.verbose)


def sweep_parser() -> argparse.ArgumentParser:
    """``pipelines/tune.py``'s flags."""
    parser = argparse.ArgumentParser(prog="pipelines/tune.py",
                                     description="Sweep PLNLP settings with Ray Tune.")
    parser.add_argument("--dataset",
                        help=f"one of {', '.join(DATASETS.names)}, or the path of your edge list "
                             "or split folder (see pipelines/run.py --help); with --resume, the "
                             "sweep's")
    sweep_of = parser.add_mutually_exclusive_group(required=True)
    sweep_of.add_argument("--space", type=Path, help="a tune_spaces/*.yaml file")
    sweep_of.add_argument("--resume", metavar="RUN_ID",
                          help="go on with an interrupted sweep (its MLflow run id), keeping "
                               "the trials that ended, with its dataset, data root and work "
                               "folder")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="fix one setting for every trial")
    parser.add_argument("--num-samples", type=int, help="trials (default: the space's)")
    parser.add_argument("--max-concurrent", type=int,
                        help="trials at once (default: the space's, else what the cluster holds)")
    parser.add_argument("--num-workers", type=int, help="Ray Train workers per trial")
    parser.add_argument("--cpus-per-worker", type=int, help="CPUs each trial's worker holds")
    parser.add_argument("--gpus-per-worker", type=float,
                        help="GPUs each trial's worker holds; a fraction shares one GPU")
    parser.add_argument("--trials-per-gpu", type=trials_per_gpu, metavar="N",
                        help="trials sharing each GPU (each worker holds 1/N of one); auto: as "
                             "many as their estimated peak memory fits in the GPU's")
    parser.add_argument("--max-failures", type=int, default=3,
                        help="restarts of a trial's dead worker group (default: 3)")
    parser.add_argument("--experiment", help="MLflow experiment (default: plnlp-<dataset>-tune)")
    parser.add_argument("--data-root", help="folder holding OGB datasets")
    parser.add_argument("--work-dir", help="scratch folder shared by all nodes on a cluster")
    parser.add_argument("--verbose", action="store_true",
                        help="show Ray's and MLflow's own progress lines too")
    add_register_arg(parser)
    add_graph_args(parser)
    return parser


REQUEST_HELP = {
    "dataset": f"one of {', '.join(DATASETS.names)}, or the path of your edge list (.csv or "
               ".parquet: src, dst[, weight, time]) or of a split folder (train, valid, test "
               "files: src, dst, label); with --resume, the run's",
    "preset": "settings to start from (pipelines/presets/<dataset>.yaml, own.yaml for your "
              "graph); default: paper, or default for your graph (the edge level; node for the "
              "faster node level)",
    "overrides": "override one setting (repeatable)",
    "experiment": "MLflow experiment (default: plnlp-<dataset>)",
    "data_root": "folder holding OGB datasets (default: $PLNLP_DATA_ROOT, else ./data)",
    "work_dir": "folder for cached stage outputs and checkpoints, shared by all nodes on a "
                "cluster (default: $PLNLP_CACHE_DIR, else ~/.cache/plnlp)",
    "yes": "run a preset made for a GPU without one, without asking",
}
"""What the flags of :func:`add_request_args` say in ``pipelines/run.py --help``."""


def add_request_args(parser: argparse.ArgumentParser, **helps: str) -> None:
    """The flags of a run's request that ``pipelines/run.py`` and
    ``pipelines/kubeflow.py`` share: what is trained (``--dataset``,
    ``--preset``, ``--set``, ``--yes``) and where it is recorded and kept
    (``--experiment``, ``--data-root``, ``--work-dir``); ``helps``, by the
    flags' names in :data:`REQUEST_HELP`, says what some mean in another
    command."""
    text = {**REQUEST_HELP, **helps}
    parser.add_argument("--dataset", help=text["dataset"])
    parser.add_argument("--preset", help=text["preset"])
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help=text["overrides"])
    parser.add_argument("--experiment", help=text["experiment"])
    parser.add_argument("--data-root", help=text["data_root"])
    parser.add_argument("--work-dir", help=text["work_dir"])
    parser.add_argument("--yes", action="store_true", help=text["yes"])


def add_register_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--register", metavar="NAME",
                        help="register the trained model in MLflow's model registry as a new "
                             "version of NAME (the best seed's, or the sweep's best trial's); "
                             "it becomes NAME@champion when its validation metric is the best")


def add_graph_args(parser: argparse.ArgumentParser) -> None:
    """How a graph of one's own or a Planetoid graph is read (unused for OGB datasets)."""
    parser.add_argument("--split",
                        help="how an edge list or a Planetoid graph is split: "
                             "random:TRAIN,VALID,TEST or time:TRAIN,VALID,TEST by an edge "
                             f"list's time column (default: {DEFAULT_SPLIT}; a Planetoid "
                             f"graph's: {NCN_SPLIT}, NCN/NCNC's)")
    parser.add_argument("--split-seed", type=int, default=0,
                        help="seeds the split and its evaluation negatives (default: 0)")
    parser.add_argument("--directed", action="store_true",
                        help="(src, dst) differs from (dst, src) (default: undirected)")
    parser.add_argument("--node-features", help="a .csv or .parquet file: an id column and "
                                                "numeric features, one row per node")
    parser.add_argument("--hits-k", default="20,50,100",
                        help="Hits@K cut-offs for your graph, besides AUC (default: 20,50,100)")


def add_worker_args(parser: argparse.ArgumentParser, cpus_per_worker: int | None = None) -> None:
    """The worker group's flags; ``cpus_per_worker`` is the flag's default
    (``None``: a local Ray's CPUs shared among the workers, one on a cluster)."""
    parser.add_argument("--num-workers", type=int, default=1, help="Ray Train workers (DDP)")
    parser.add_argument("--cpus-per-worker", type=int, default=cpus_per_worker,
                        help="CPUs (torch threads) each worker holds (default: "
                             + ("the local Ray's CPUs shared among the workers; 1 on a cluster "
                                "at RAY_ADDRESS" if cpus_per_worker is None
                                else str(cpus_per_worker)) + ")")
    parser.add_argument("--use-gpu", action="store_true", help="one GPU per worker")
    parser.add_argument("--max-failures", type=int, default=3,
                        help="times a dead worker group is restarted from the latest "
                             "checkpoint before the run fails (default: 3)")


def graph_flags(args: argparse.Namespace) -> GraphFlags:
    """The flags of :func:`add_graph_args`."""
    return GraphFlags(args.split, args.split_seed, args.directed, args.node_features, args.hits_k)


def worker_group(args: argparse.Namespace) -> WorkerGroup:
    """The flags of :func:`add_worker_args` (but ``--max-failures``)."""
    return WorkerGroup(args.num_workers, args.cpus_per_worker, args.use_gpu)


def trials_per_gpu(text: str) -> int | str:
    """``--trials-per-gpu``: a whole number, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a whole number nor auto") from None
