"""What the flags name: the graph ``--dataset`` names, and the settings of
presets, config files and ``--set`` overrides resolved into one
:class:`PLNLPConfig`; and the :class:`RunPlan` a run starts from. Nothing
here imports Ray or MLflow, so a refused setting answers at once."""
import argparse
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.data.own_graph import describe_own_graph, parse_split
from plnlp_core.errors import PLNLPError

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
