"""Command-line settings of the pipelines: what ``--dataset`` names, presets,
config files and ``--set`` overrides, resolved into one :class:`PLNLPConfig`
and a :class:`RunPlan`. Nothing here imports Ray or MLflow, so ``--help``
and a refused setting answer at once."""
import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from components.workers import WorkerGroup
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS, DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.heuristics import HEURISTICS
from plnlp_core.own_graph import DEFAULT_SPLIT, describe_own_graph, parse_split

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
NEEDS_GPU = "needs_gpu"
OWN_PRESETS = "own"  # pipelines/presets/own.yaml: the presets of graphs of one's own


@dataclass(frozen=True)
class GraphSource:
    """What ``--dataset`` names: an OGB dataset, or (with ``path``) a graph
    of one's own, an edge list or a split folder."""

    info: DatasetInfo
    path: Path | None = None

    @property
    def presets(self) -> str:
        """The presets file: ``<dataset>.yaml``, or ``own.yaml``."""
        return OWN_PRESETS if self.path is not None else self.info.name


@dataclass
class RunPlan:
    """What a run starts from.

    Attributes:
        run_id (str, optional): The MLflow run that goes on (``--resume``).
        config (PLNLPConfig): Its settings.
        runs (int): Its number of seeds.
        source (GraphSource): Its graph.
        model (str): ``plnlp`` or ``heuristic:<name>``.
        children (dict): Seed to nested run id, for ``--runs`` > 1.
        finished (dict): Seed to ``final_*`` metrics of the seeds done.
    """

    run_id: str | None
    config: PLNLPConfig
    runs: int
    source: GraphSource
    model: str = "plnlp"
    children: dict[int, str] = field(default_factory=dict)
    finished: dict[int, dict[str, float]] = field(default_factory=dict)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pipelines/run.py",
        description="Train and evaluate a PLNLP link predictor on an OGB dataset or a graph of "
                    "your own, on Ray, recording to MLflow.",
    )
    parser.add_argument("--dataset", required=True,
                        help=f"one of {', '.join(DATASETS.names)}, or the path of your edge list "
                             "(.csv or .parquet: src, dst[, weight, time]) or of a split folder "
                             "(train, valid, test files: src, dst, label)")
    parser.add_argument("--preset", help="settings to start from (pipelines/presets/"
                                         "<dataset>.yaml, own.yaml for your graph); default: "
                                         "paper, or default for your graph")
    parser.add_argument("--config", type=Path, help="a YAML mapping of settings to override")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one setting (repeatable)")
    parser.add_argument("--model", default="plnlp",
                        help="plnlp (default), or a classic heuristic scoring the same pairs: "
                             + ", ".join(f"heuristic:{name}" for name in HEURISTICS.names))
    parser.add_argument("--runs", type=int, default=1, help="independent runs (seeds S..S+N-1)")
    parser.add_argument("--seed", type=int, help="first seed (default: the config's)")
    add_graph_args(parser)
    add_worker_args(parser)
    parser.add_argument("--experiment", help="MLflow experiment (default: plnlp-<dataset>)")
    parser.add_argument("--data-root", help="folder holding OGB datasets "
                                            "(default: $PLNLP_DATA_ROOT, else ./data)")
    parser.add_argument("--work-dir", help="folder for cached stage outputs and checkpoints, "
                                           "shared by all nodes on a cluster "
                                           "(default: $PLNLP_CACHE_DIR, else ~/.cache/plnlp)")
    parser.add_argument("--resume", metavar="RUN_ID",
                        help="go on with a stopped or failed run (its MLflow run id) from its "
                             "latest checkpoint, with its settings (--set may change epochs)")
    parser.add_argument("--yes", action="store_true",
                        help="run a preset made for a GPU without one, without asking")
    parser.add_argument("--verbose", action="store_true",
                        help="show Ray's and MLflow's own progress lines too")
    return parser.parse_args(argv)


def add_graph_args(parser: argparse.ArgumentParser) -> None:
    """How a graph of one's own is read (unused for OGB datasets)."""
    parser.add_argument("--split", default=DEFAULT_SPLIT,
                        help="how an edge list is split: random:TRAIN,VALID,TEST or "
                             f"time:TRAIN,VALID,TEST by its time column (default: {DEFAULT_SPLIT})")
    parser.add_argument("--split-seed", type=int, default=0,
                        help="seeds the split and its evaluation negatives (default: 0)")
    parser.add_argument("--directed", action="store_true",
                        help="(src, dst) differs from (dst, src) (default: undirected)")
    parser.add_argument("--node-features", help="a .csv or .parquet file: an id column and "
                                                "numeric features, one row per node")
    parser.add_argument("--hits-k", default="20,50,100",
                        help="Hits@K cut-offs for your graph, besides AUC (default: 20,50,100)")


def cut_offs(text: str) -> tuple[int, ...]:
    """``"20,50,100"`` as ``(20, 50, 100)``."""
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise PLNLPError(f"--hits-k {text!r} is not a list of positive integers; write e.g. "
                         "--hits-k 20,50,100.")
    return values


def add_worker_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--num-workers", type=int, default=1, help="Ray Train workers (DDP)")
    parser.add_argument("--cpus-per-worker", type=int, default=1,
                        help="CPUs (torch threads) each worker holds (default: 1)")
    parser.add_argument("--use-gpu", action="store_true", help="one GPU per worker")
    parser.add_argument("--max-failures", type=int, default=3,
                        help="times a dead worker group is restarted from the latest "
                             "checkpoint before the run fails (default: 3)")


def worker_group(args: argparse.Namespace) -> WorkerGroup:
    return WorkerGroup(args.num_workers, args.cpus_per_worker, args.use_gpu)


def plan_run(args: argparse.Namespace) -> RunPlan:
    """The plan of ``args``: their graph and settings, or, with ``--resume``,
    the run that goes on (see :func:`pipelines.resume.resumed_run`)."""
    source = graph_source(args)
    model = _model(args.model)
    if args.resume is not None:
        from pipelines.resume import resumed_run  # looks the run up in MLflow

        return resumed_run(args, source)
    config = resolve_config(args, source)
    if model == "plnlp":
        confirm_cpu_run(args, source)
    return RunPlan(None, config, args.runs if model == "plnlp" else 1, source, model)


def graph_source(args: argparse.Namespace) -> GraphSource:
    """The OGB dataset ``--dataset`` names, or the graph of one's own at that
    path, described from its files' headers."""
    if args.dataset in DATASETS:
        return GraphSource(DATASETS.get(args.dataset))
    path = Path(args.dataset)
    if not (path.is_dir() or path.suffix.lower() in (".csv", ".parquet")):
        raise PLNLPError(f"unknown dataset {args.dataset!r}; choose one of: "
                         f"{', '.join(DATASETS.names)}, or give the path of your edge list "
                         "(.csv or .parquet) or of a split folder.")
    parse_split(args.split)
    info = describe_own_graph(path, args.directed, args.node_features, cut_offs(args.hits_k))
    return GraphSource(info, path)


def _model(name: str) -> str:
    kind, _, heuristic = name.partition(":")
    if name != "plnlp" and not (kind == "heuristic" and heuristic in HEURISTICS):
        raise PLNLPError(f"unknown model {name!r}; choose plnlp or one of: "
                         f"{', '.join(f'heuristic:{h}' for h in HEURISTICS.names)}.")
    return name


def preset_name(args: argparse.Namespace, source: GraphSource) -> str:
    """``--preset``, else ``default`` for a graph of one's own, else ``paper``."""
    return args.preset or ("default" if source.path is not None else "paper")


def resolve_config(args: argparse.Namespace, source: GraphSource) -> PLNLPConfig:
    """Preset, then ``--config``, then ``--set``, then ``--seed``; validated
    against the graph."""
    settings: dict[str, object] = load_preset(source.presets, preset_name(args, source))
    settings["dataset"] = source.info.name
    if args.config is not None:
        settings.update(read_mapping(args.config, "config"))
    settings.update(parse_overrides(args.overrides))
    if args.seed is not None:
        settings["seed"] = args.seed
    if settings["dataset"] != source.info.name:
        raise PLNLPError(f"the config names dataset {settings['dataset']!r} but --dataset is "
                         f"{args.dataset!r}; choose one with --dataset.")
    config = PLNLPConfig.from_mapping(settings)
    config.validate(source.info if source.path is not None else None)
    if args.runs < 1:
        raise PLNLPError(f"--runs must be at least 1, got {args.runs}.")
    if args.max_failures < 0:
        raise PLNLPError(f"--max-failures must be 0 or more, got {args.max_failures}.")
    return config


def parse_overrides(overrides: list[str]) -> dict[str, object]:
    """``["lr=0.01", "loss=auc"]`` to settings, each value read as YAML."""
    settings = {}
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or not key:
            raise PLNLPError(f"--set {override!r} is not KEY=VALUE; write e.g. --set lr=0.01.")
        settings[key.strip()] = yaml.safe_load(value)
    return settings


def load_preset(dataset: str, preset: str) -> dict[str, object]:
    """The settings of ``preset`` in ``pipelines/presets/<dataset>.yaml``
    (without its ``needs_gpu`` mark, see :func:`preset_needs_gpu`)."""
    settings = _preset_entry(dataset, preset)
    settings.pop(NEEDS_GPU, None)
    return settings


def preset_needs_gpu(dataset: str, preset: str) -> bool:
    """Whether ``preset`` is marked ``needs_gpu: true`` (hours on CPUs)."""
    return bool(_preset_entry(dataset, preset).get(NEEDS_GPU, False))


def _preset_entry(dataset: str, preset: str) -> dict[str, object]:
    path = PRESETS_DIR / f"{dataset}.yaml"
    presets = read_mapping(path, "presets") if path.exists() else {}
    if preset not in presets:
        raise PLNLPError(f"unknown preset {preset!r} for {dataset}; choose one of: "
                         f"{', '.join(presets) or 'none (use --config)'}.")
    settings = presets[preset]
    known = [*PLNLPConfig.setting_names(), NEEDS_GPU]
    unknown = [key for key in settings if key not in known] if isinstance(settings, dict) else []
    if not isinstance(settings, dict) or unknown:
        problem = f"sets unknown {', '.join(unknown)}" if unknown else "is not a mapping"
        raise PLNLPError(f"preset {preset!r} in {path} {problem}; fix the preset file "
                         f"(valid settings are: {', '.join(known)}).")
    return dict(settings)


def read_mapping(path: Path, what: str) -> dict:
    """A YAML file holding a mapping; ``what`` names it in errors."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        detail = str(error).strip().splitlines()[0]
        raise PLNLPError(f"cannot read {what} {path} ({detail}); "
                         "give a readable YAML file.") from error
    if not isinstance(data, dict):
        raise PLNLPError(f"{what} {path} must be a YAML mapping, got {type(data).__name__}.")
    return data


def confirm_cpu_run(args: argparse.Namespace, source: GraphSource) -> None:
    """A preset made for a GPU started without ``--use-gpu`` goes on only
    with ``--yes`` or a "y" typed at a terminal; elsewhere it is refused."""
    preset = preset_name(args, source)
    if args.use_gpu or args.yes or not preset_needs_gpu(source.presets, preset):
        return
    question = (f"The {args.dataset} {preset!r} preset is made for a GPU and takes hours "
                "on CPUs. Run it on CPUs anyway? [y/N] ")
    if sys.stdin.isatty() and input(question).strip().lower() in ("y", "yes"):
        return
    raise PLNLPError(f"the {args.dataset} {preset!r} preset is made for a GPU and would "
                     "take hours on CPUs; add --use-gpu on a machine with GPUs, choose "
                     "--preset cpu (or smoke), or add --yes to run it on CPUs anyway.")
