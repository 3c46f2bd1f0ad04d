"""How a :class:`~pipelines.planning.request.RunRequest` becomes, in one
pass of :func:`plan_run`, a :class:`~pipelines.planning.request.RunPlan`:
the graph it names, the settings of its preset, config file and ``--set``
resolved and validated, a preset made for a GPU confirmed, or, with
``resume``, the stopped run that goes on (:mod:`pipelines.planning.resume`, which
looks it up in MLflow and is imported only then, so that ``--help`` and a
refused setting answer at once; a graph of one's own is read with pyarrow
and torch, imported only for one)."""
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.planning.presets import (
    load_preset,
    parse_overrides,
    preset_needs_gpu,
    read_mapping,
)
from pipelines.planning.request import GraphFlags, GraphSource, RunPlan, RunRequest
from plnlp_core.choices import DEFAULT_SPLIT, HEURISTIC_CHOICES, NCN_SPLIT
from plnlp_core.config import PLNLPConfig, with_graph_node_input
from plnlp_core.data.datasets import DATASETS
from plnlp_core.errors import PLNLPError
from plnlp_core.preflight.checks import check_config

if TYPE_CHECKING:
    from plnlp_core.data.node_features import FeatureTable


def plan_run(request: RunRequest) -> RunPlan:
    """The plan of ``request``: its graph and settings, or, with
    ``resume``, the run that goes on (see
    :func:`pipelines.planning.resume.resumed_run`)."""
    _check_model(request)
    if request.resume is not None:
        from pipelines.planning.resume import resumed_run  # looks the run up in MLflow

        return resumed_run(request, lambda dataset: graph_source(dataset, request.graph))
    source = graph_source(request.dataset, request.graph)
    config = resolve_config(request, source)
    plan = RunPlan(request, config, source, runs=request.runs if request.model == "plnlp" else 1)
    if request.preset is None and source.preset_choice is not None:
        print(source.preset_choice, flush=True)
    if request.model == "plnlp":
        print(plan.node_input_choice, flush=True)
    if request.model == "plnlp":
        confirm_cpu_run(plan)
    return plan


def _check_model(request: RunRequest) -> None:
    kind, _, heuristic = request.model.partition(":")
    if request.model != "plnlp" and not (kind == "heuristic" and heuristic in HEURISTIC_CHOICES):
        raise PLNLPError(f"unknown model {request.model!r}; choose plnlp or one of: "
                         f"{', '.join(f'heuristic:{h}' for h in HEURISTIC_CHOICES)}.")
    if request.model != "plnlp" and request.register is not None:
        raise PLNLPError(f"--register keeps a trained model, and {request.model} is a heuristic "
                         "with none; drop --register, or train one with --model plnlp.")


def graph_source(dataset: str, graph: GraphFlags) -> GraphSource:
    """The OGB dataset ``dataset`` names, or the graph of one's own at that
    path, described from its files' headers."""
    if dataset in DATASETS:
        info = DATASETS.get(dataset)
        if info.draws_its_split:
            check_drawn_split(graph.split_of(info), dataset)
        return GraphSource(info)
    path = Path(dataset)
    if not (path.is_dir() or path.suffix.lower() in (".csv", ".parquet")):
        raise PLNLPError(f"unknown dataset {dataset!r}; choose one of: "
                         f"{', '.join(DATASETS.names)}, or give the path of your edge list "
                         "(.csv or .parquet) or of a split folder.")
    from plnlp_core.data.own_graph import count_edges, describe_own_graph, parse_split

    parse_split(graph.split or DEFAULT_SPLIT)
    info = describe_own_graph(path, graph.directed, cut_offs(graph.hits_k))
    num_edges = count_edges(path)
    if graph.node_features is not None:
        table = checked_features(path, graph.node_features)
        info = dataclasses.replace(info, feature_dim=table.num_features,
                                   mean_degree=2 * num_edges / table.num_nodes)
    return GraphSource(info, path, num_edges)


def checked_features(path: Path, features: str) -> "FeatureTable":
    """The node features of ``features`` over the graph at ``path``, read
    and checked before anything starts; its rows for ids the graph lacks
    are said in a warning and left out."""
    from plnlp_core.data.own_graph import own_node_features

    table = own_node_features(path, features)
    if len(table.extra_ids):
        print(f"warning: the node feature file {features} has rows for {len(table.extra_ids)} "
              f"ids that are no node of the graph (e.g. {table.extra_ids[0]}); they are left "
              "out.", file=sys.stderr)
    return table


def check_drawn_split(spec: str, dataset: str) -> None:
    """Refuses a split of a Planetoid graph that does not parse or is not
    random (its edges have no times)."""
    from plnlp_core.data.own_graph import parse_split

    if parse_split(spec)[0] != "random":
        raise PLNLPError(f"--split {spec} splits by time, and {dataset}'s edges have none; give "
                         f"random:TRAIN,VALID,TEST, e.g. {NCN_SPLIT}.")


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


def resolve_config(request: RunRequest, source: GraphSource) -> PLNLPConfig:
    """Preset, then the config file, then ``--set``, then ``--seed``;
    validated against the graph."""
    settings = load_preset(source.presets, request.preset or source.default_preset)
    settings["dataset"] = source.info.name
    settings.update(user_settings(request))
    settings = with_graph_node_input(settings, source.info.feature_dim)
    if settings["dataset"] != source.info.name:
        raise PLNLPError(f"the config names dataset {settings['dataset']!r} but --dataset is "
                         f"{request.dataset!r}; choose one with --dataset.")
    config = PLNLPConfig.from_mapping(settings)
    check_config(config, source.info if source.path is not None else None)
    if request.runs < 1:
        raise PLNLPError(f"--runs must be at least 1, got {request.runs}.")
    if request.max_failures < 0:
        raise PLNLPError(f"--max-failures must be 0 or more, got {request.max_failures}.")
    return config


def user_settings(request: RunRequest) -> dict[str, object]:
    """The settings the config file, ``--set`` and ``--seed`` give, in that order."""
    settings = read_mapping(request.config_file, "config") if request.config_file else {}
    settings.update(parse_overrides(request.overrides))
    if request.seed is not None:
        settings["seed"] = request.seed
    return settings


def confirm_cpu_run(plan: RunPlan) -> None:
    """A preset made for a GPU started without GPUs goes on only with
    ``yes`` or a "y" typed at a terminal; elsewhere it is refused."""
    request = plan.request
    if request.workers.use_gpu or request.yes or not preset_needs_gpu(plan.source.presets,
                                                                     plan.preset):
        return
    question = (f"The {request.dataset} {plan.preset!r} preset is made for a GPU and takes "
                "hours on CPUs. Run it on CPUs anyway? [y/N] ")
    if sys.stdin.isatty() and input(question).strip().lower() in ("y", "yes"):
        return
    raise PLNLPError(f"the {request.dataset} {plan.preset!r} preset is made for a GPU and would "
                     "take hours on CPUs; add --use-gpu on a machine with GPUs, choose "
                     "--preset cpu (or smoke), or add --yes to run it on CPUs anyway.")
