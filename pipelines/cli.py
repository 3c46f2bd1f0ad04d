"""Command-line settings of the pipelines: presets, config files and
``--set`` overrides, resolved into one :class:`PLNLPConfig`."""
import argparse
import sys
from pathlib import Path

import yaml

from components.train import WorkerGroup
from plnlp_core.config import PLNLPConfig
from plnlp_core.datasets import DATASETS
from plnlp_core.errors import PLNLPError

PRESETS_DIR = Path(__file__).resolve().parent / "presets"
NEEDS_GPU = "needs_gpu"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pipelines/run.py",
        description="Train and evaluate a PLNLP link predictor on an OGB dataset, on Ray, "
                    "recording to MLflow.",
    )
    parser.add_argument("--dataset", required=True, help=f"one of: {', '.join(DATASETS.names)}")
    parser.add_argument("--preset", default="paper",
                        help="settings to start from (pipelines/presets/<dataset>.yaml); "
                             "default: paper")
    parser.add_argument("--config", type=Path, help="a YAML mapping of settings to override")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override one setting (repeatable)")
    parser.add_argument("--runs", type=int, default=1, help="independent runs (seeds S..S+N-1)")
    parser.add_argument("--seed", type=int, help="first seed (default: the config's)")
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


def resolve_config(args: argparse.Namespace) -> PLNLPConfig:
    """Preset, then ``--config``, then ``--set``, then ``--seed``; validated."""
    DATASETS.get(args.dataset)
    settings: dict[str, object] = load_preset(args.dataset, args.preset)
    settings["dataset"] = args.dataset
    if args.config is not None:
        settings.update(read_mapping(args.config, "config"))
    settings.update(parse_overrides(args.overrides))
    if args.seed is not None:
        settings["seed"] = args.seed
    if settings["dataset"] != args.dataset:
        raise PLNLPError(f"the config names dataset {settings['dataset']!r} but --dataset is "
                         f"{args.dataset!r}; choose one with --dataset.")
    config = PLNLPConfig.from_mapping(settings)
    config.validate()
    if args.runs < 1:
        raise PLNLPError(f"--runs must be at least 1, got {args.runs}.")
    if args.max_failures < 0:
        raise PLNLPError(f"--max-failures must be 0 or more, got {args.max_failures}.")
    confirm_cpu_run(args)
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


def confirm_cpu_run(args: argparse.Namespace) -> None:
    """A preset made for a GPU started without ``--use-gpu`` goes on only
    with ``--yes`` or a "y" typed at a terminal; elsewhere it is refused."""
    if args.use_gpu or args.yes or not preset_needs_gpu(args.dataset, args.preset):
        return
    question = (f"The {args.dataset} {args.preset!r} preset is made for a GPU and takes hours "
                "on CPUs. Run it on CPUs anyway? [y/N] ")
    if sys.stdin.isatty() and input(question).strip().lower() in ("y", "yes"):
        return
    raise PLNLPError(f"the {args.dataset} {args.preset!r} preset is made for a GPU and would "
                     "take hours on CPUs; add --use-gpu on a machine with GPUs, choose "
                     "--preset cpu (or smoke), or add --yes to run it on CPUs anyway.")
