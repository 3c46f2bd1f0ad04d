"""The settings files a command reads: presets (``pipelines/presets/<dataset>.yaml``,
``own.yaml`` for graphs of one's own), ``--config`` and search-space files,
and ``--set`` overrides. The one reader of presets: the commands, the
Kubeflow compiler and the benchmarks take them from here. Nothing here
imports Ray or MLflow, so a refused setting answers at once."""
from pathlib import Path

import yaml

from pipelines.planning.settings_yaml import read_settings_yaml
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError

PRESETS_DIR = Path(__file__).resolve().parents[1] / "presets"
NEEDS_GPU = "needs_gpu"
OWN_PRESETS = "own"  # pipelines/presets/own.yaml: the presets of graphs of one's own
PLANETOID_PRESETS = "planetoid"  # pipelines/presets/planetoid.yaml: Cora's, CiteSeer's, PubMed's


def presets_file(dataset: str, own_graph: bool) -> str:
    """The presets file of a run of ``dataset``: ``<dataset>.yaml``,
    ``planetoid.yaml`` for Planetoid's graphs, or ``own.yaml`` for a graph
    of one's own."""
    if own_graph:
        return OWN_PRESETS
    planetoid = dataset in DATASETS and DATASETS.get(dataset).family == "planetoid"
    return PLANETOID_PRESETS if planetoid else dataset


SAMPLED_FROM_EDGES = 250_000
"""The edge count from which a graph of one's own starts from the
``sampled`` preset: the edge level's ``default`` took 625 s on 95,760
edges (docs/method.md) and grows with the graph; the node level with
neighbour sampling costs a step the same at any size."""


SPARSE_BELOW_DEGREE = 3.3
"""The mean degree (2 x edges / nodes) below which a graph with node
features starts from the sparse recipe (``sparse`` of ``planetoid.yaml``,
``sparse_features`` of ``own.yaml``): where common neighbours are rare the
features carry the links, and a wider model with heavy dropout fits them
(CiteSeer, 2.74: test Hits@100 93.0 against 88.5; Cora, 3.90, and the
denser graphs of ``benchmarks/feature_graphs.py`` lose with it)."""


def default_preset(own_graph: bool, num_edges: int | None = None, features: bool = False,
                   dataset: str = "", mean_degree: float | None = None) -> str:
    """The preset a run starts from unless told: ``paper`` for an OGB
    dataset; for a Planetoid graph ``default``, or ``sparse`` below
    :data:`SPARSE_BELOW_DEGREE`; for a graph of one's own ``features`` where
    it has node features (``sparse_features`` below that degree), else
    ``default`` (its edge level), or ``sampled`` (the node level with
    neighbour sampling) from :data:`SAMPLED_FROM_EDGES` edges on."""
    if not own_graph:
        if presets_file(dataset, False) != PLANETOID_PRESETS:
            return "paper"
        return "sparse" if is_sparse(DATASETS.get(dataset).mean_degree) else "default"
    if num_edges is not None and num_edges >= SAMPLED_FROM_EDGES:
        return "sampled"
    if features:
        return "sparse_features" if is_sparse(mean_degree) else "features"
    return "default"


def is_sparse(mean_degree: float | None) -> bool:
    """Whether a graph of ``mean_degree`` takes the sparse recipe."""
    return mean_degree is not None and mean_degree < SPARSE_BELOW_DEGREE


def preset_choice(num_edges: int, features: bool = False,
                  mean_degree: float | None = None) -> str:
    """Why a graph of one's own of ``num_edges`` edges starts from the preset it does."""
    chosen = default_preset(True, num_edges, features, mean_degree=mean_degree)
    if chosen in ("features", "sparse_features"):
        return (f"preset {chosen}: the graph has node features, {num_edges:,} edges, fewer "
                f"than {SAMPLED_FROM_EDGES:,}, and {degree_clause(mean_degree)} (--preset "
                "chooses another)")
    side = "at least" if chosen == "sampled" else "fewer than"
    return (f"preset {chosen}: the graph has {num_edges:,} edges, {side} "
            f"{SAMPLED_FROM_EDGES:,} (the edge level below, the node level with neighbour "
            "sampling from there on; --preset chooses another)")


def planetoid_choice(dataset: str) -> str:
    """Why a Planetoid graph starts from the preset it does."""
    return (f"preset {default_preset(False, dataset=dataset)}: {dataset} has node features and "
            f"{degree_clause(DATASETS.get(dataset).mean_degree)} (--preset chooses another)")


def degree_clause(mean_degree: float) -> str:
    """``a mean degree of 2.74, below 3.3``: the degree and its side of
    :data:`SPARSE_BELOW_DEGREE`, which chose the recipe."""
    side = "below" if is_sparse(mean_degree) else "at least"
    return f"a mean degree of {mean_degree:.2f}, {side} {SPARSE_BELOW_DEGREE}"


def load_preset(dataset: str, preset: str) -> dict[str, object]:
    """The settings of ``preset`` in ``pipelines/presets/<dataset>.yaml``
    (without its ``needs_gpu`` mark, see :func:`preset_needs_gpu`)."""
    settings = _preset_entry(dataset, preset)
    settings.pop(NEEDS_GPU, None)
    return settings


def preset_needs_gpu(dataset: str, preset: str) -> bool:
    """Whether ``preset`` is marked ``needs_gpu: true`` (hours on CPUs)."""
    return bool(_preset_entry(dataset, preset).get(NEEDS_GPU, False))


def preset_names(dataset: str) -> list[str]:
    """The presets ``pipelines/presets/<dataset>.yaml`` holds."""
    path = PRESETS_DIR / f"{dataset}.yaml"
    return list(read_mapping(path, "presets")) if path.exists() else []


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


def parse_overrides(overrides: tuple[str, ...] | list[str]) -> dict[str, object]:
    """``["lr=0.01", "loss=auc"]`` to settings, each value read as YAML."""
    settings = {}
    for override in overrides:
        key, sep, value = override.partition("=")
        if not sep or not key:
            raise PLNLPError(f"--set {override!r} is not KEY=VALUE; write e.g. --set lr=0.01.")
        settings[key.strip()] = read_settings_yaml(value)
    return settings


def read_mapping(path: Path, what: str) -> dict:
    """A YAML file holding a mapping; ``what`` names it in errors."""
    try:
        data = read_settings_yaml(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        detail = str(error).strip().splitlines()[0]
        raise PLNLPError(f"cannot read {what} {path} ({detail}); "
                         "give a readable YAML file.") from error
    if not isinstance(data, dict):
        raise PLNLPError(f"{what} {path} must be a YAML mapping, got {type(data).__name__}.")
    return data
