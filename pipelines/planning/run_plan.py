"""What a run is asked to do and what it will do: a :class:`RunRequest`
(the typed form of ``pipelines/run.py``'s flags, or of a Kubeflow step's
parameters) becomes, in one pass of :func:`plan_run`, a :class:`RunPlan`:
the graph it names, the settings of its preset, config file and ``--set``
resolved and validated, a preset made for a GPU confirmed, or, with
``resume``, the stopped run that goes on (:mod:`pipelines.planning.resume`, which
looks it up in MLflow and is imported only then, so that ``--help`` and a
refused setting answer at once)."""
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from components.training.workers import WorkerGroup
from pipelines.planning.presets import (
    OWN_PRESETS,
    load_preset,
    parse_overrides,
    preset_needs_gpu,
    read_mapping,
)
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.data.own_graph import DEFAULT_SPLIT, describe_own_graph, parse_split
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.heuristics import HEURISTICS


@dataclass(frozen=True)
class GraphFlags:
    """How a graph of one's own is read (unused for OGB datasets): its
    ``split`` (``random:TRAIN,VALID,TEST`` or ``time:...``), the seed of the
    split and of its negatives, whether it is ``directed``, a node features
    file and the Hits@K cut-offs (``"20,50,100"``)."""

    split: str = DEFAULT_SPLIT
    split_seed: int = 0
    directed: bool = False
    node_features: str | None = None
    hits_k: str = "20,50,100"


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to do: the flags of ``pipelines/run.py``.

    Attributes:
        dataset (str): An OGB dataset's name, or the path of an edge list or
            split folder.
        preset (str, optional): Settings to start from (default: ``paper``,
            or ``default`` for a graph of one's own).
        config_file (Path, optional): A YAML mapping of settings over the preset.
        overrides (tuple): ``KEY=VALUE`` settings over both.
        model (str): ``plnlp`` or ``heuristic:<name>``.
        runs (int): Seeds, from ``seed`` (default: the config's) on.
        graph (GraphFlags): How a graph of one's own is read.
        workers (WorkerGroup): The Ray Train workers of each training.
        max_failures (int): Restarts of a dead worker group.
        experiment (str, optional): The MLflow experiment.
        data_root (str, optional): The folder or URI holding OGB datasets.
        work_dir (str, optional): The folder or URI of stage outputs and checkpoints.
        resume (str, optional): The MLflow run that goes on.
        register (str, optional): The registered model the result joins.
        yes (bool): Run a preset made for a GPU on CPUs without asking.
        verbose (bool): Show Ray's and MLflow's own lines.
    """

    dataset: str
    preset: str | None = None
    config_file: Path | None = None
    overrides: tuple[str, ...] = ()
    model: str = "plnlp"
    runs: int = 1
    seed: int | None = None
    graph: GraphFlags = GraphFlags()
    workers: WorkerGroup = WorkerGroup()
    max_failures: int = 3
    experiment: str | None = None
    data_root: str | None = None
    work_dir: str | None = None
    resume: str | None = None
    register: str | None = None
    yes: bool = False
    verbose: bool = False


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

    @property
    def default_preset(self) -> str:
        """``default`` for a graph of one's own, else ``paper``."""
        return "default" if self.path is not None else "paper"


@dataclass
class RunPlan:
    """What a run does.

    Attributes:
        request (RunRequest): What it was asked.
        config (PLNLPConfig): Its settings.
        source (GraphSource): Its graph.
        run_id (str, optional): The MLflow run that goes on (``resume``).
        runs (int): Its number of seeds.
        children (dict): Seed to nested run id, for ``runs`` > 1.
        finished (dict): Seed to ``final_*`` metrics of the seeds done.
    """

    request: RunRequest
    config: PLNLPConfig
    source: GraphSource
    run_id: str | None = None
    runs: int = 1
    children: dict[int, str] = field(default_factory=dict)
    finished: dict[int, dict[str, float]] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return self.request.model

    @property
    def preset(self) -> str:
        return self.request.preset or self.source.default_preset

    @property
    def experiment(self) -> str:
        """The MLflow experiment: ``--experiment``, else ``plnlp-<dataset>``."""
        return self.request.experiment or f"plnlp-{self.source.info.name}"

    def run_name(self, seeds: str | None = None) -> str:
        """What tells runs apart in the MLflow UI: the graph, the preset or
        model, the config file and overridden settings in short, and the
        seed(s)."""
        request = self.request
        parts = [self.source.info.name, self.preset if self.model == "plnlp" else self.model]
        if request.config_file is not None:
            parts.append(Path(request.config_file).stem)
        parts += [override.replace(" ", "") for override in request.overrides]
        first = self.config.seed
        parts.append(seeds or (f"seed{first}" if self.runs == 1
                               else f"seeds{first}-{first + self.runs - 1}"))
        return "-".join(parts)[:250]

    def params(self) -> dict[str, object]:
        """What a run logs beside its settings: the preset it started from
        and its model, and, for PLNLP, the seeds, the restarts allowed and
        the worker group (a heuristic is one CPU task)."""
        if self.model != "plnlp":
            return {"model": self.model, "preset": self.preset}
        return {"model": self.model, "preset": self.preset, "runs": self.runs,
                "max_failures": self.request.max_failures, **asdict(self.request.workers)}


def plan_run(request: RunRequest) -> RunPlan:
    """The plan of ``request``: its graph and settings, or, with
    ``resume``, the run that goes on (see :func:`pipelines.planning.resume.resumed_run`)."""
    source = graph_source(request.dataset, request.graph)
    _check_model(request)
    if request.resume is not None:
        from pipelines.planning.resume import resumed_run  # looks the run up in MLflow

        return resumed_run(request, source)
    config = resolve_config(request, source)
    plan = RunPlan(request, config, source, runs=request.runs if request.model == "plnlp" else 1)
    if request.model == "plnlp":
        confirm_cpu_run(plan)
    return plan


def _check_model(request: RunRequest) -> None:
    kind, _, heuristic = request.model.partition(":")
    if request.model != "plnlp" and not (kind == "heuristic" and heuristic in HEURISTICS):
        raise PLNLPError(f"unknown model {request.model!r}; choose plnlp or one of: "
                         f"{', '.join(f'heuristic:{h}' for h in HEURISTICS.names)}.")
    if request.model != "plnlp" and request.register is not None:
        raise PLNLPError(f"--register keeps a trained model, and {request.model} is a heuristic "
                         "with none; drop --register, or train one with --model plnlp.")


def graph_source(dataset: str, graph: GraphFlags) -> GraphSource:
    """The OGB dataset ``dataset`` names, or the graph of one's own at that
    path, described from its files' headers."""
    if dataset in DATASETS:
        return GraphSource(DATASETS.get(dataset))
    path = Path(dataset)
    if not (path.is_dir() or path.suffix.lower() in (".csv", ".parquet")):
        raise PLNLPError(f"unknown dataset {dataset!r}; choose one of: "
                         f"{', '.join(DATASETS.names)}, or give the path of your edge list "
                         "(.csv or .parquet) or of a split folder.")
    parse_split(graph.split)
    info = describe_own_graph(path, graph.directed, graph.node_features, cut_offs(graph.hits_k))
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


def resolve_config(request: RunRequest, source: GraphSource) -> PLNLPConfig:
    """Preset, then the config file, then ``--set``, then ``--seed``;
    validated against the graph."""
    settings = load_preset(source.presets, request.preset or source.default_preset)
    settings["dataset"] = source.info.name
    if request.config_file is not None:
        settings.update(read_mapping(request.config_file, "config"))
    settings.update(parse_overrides(request.overrides))
    if request.seed is not None:
        settings["seed"] = request.seed
    if settings["dataset"] != source.info.name:
        raise PLNLPError(f"the config names dataset {settings['dataset']!r} but --dataset is "
                         f"{request.dataset!r}; choose one with --dataset.")
    config = PLNLPConfig.from_mapping(settings)
    config.validate(source.info if source.path is not None else None)
    if request.runs < 1:
        raise PLNLPError(f"--runs must be at least 1, got {request.runs}.")
    if request.max_failures < 0:
        raise PLNLPError(f"--max-failures must be 0 or more, got {request.max_failures}.")
    return config


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
