"""What a run or a sweep is asked to do and what it will do: a
:class:`RunRequest` (the typed form of ``pipelines/run.py``'s flags, or of a
Kubeflow step's parameters) and the :class:`RunPlan` that
:func:`pipelines.planning.run_plan.plan_run` makes of it; a
:class:`SweepRequest` (``pipelines/tune.py``'s flags, or the Kubeflow sweep
step's parameters) and the :class:`SweepPlan` that
:func:`pipelines.planning.sweep_plan.plan_sweep` makes of it. Nothing here
imports torch, Ray or MLflow."""
import dataclasses
from dataclasses import asdict, dataclass, field
from pathlib import Path

from components.train.worker_group import WorkerGroup
from pipelines.planning.input_choice import node_input_choice
from pipelines.planning.presets import (
    default_preset,
    load_preset,
    parse_overrides,
    planetoid_choice,
    preset_choice,
    presets_file,
    read_mapping,
)
from pipelines.planning.sweep_space import Resources, SearchSpace
from plnlp_core.choices import DEFAULT_SPLIT, NCN_SPLIT
from plnlp_core.config import PLNLPConfig, with_graph_node_input
from plnlp_core.data.datasets import DatasetInfo


@dataclass(frozen=True)
class GraphFlags:
    """How a graph of one's own or a Planetoid graph is read (unused for
    OGB datasets): its ``split`` (``random:TRAIN,VALID,TEST`` or
    ``time:...``; ``None``: the graph's default, :meth:`split_of`), the seed
    of the split and of its negatives, whether it is ``directed``, a node
    features file and the Hits@K cut-offs (``"20,50,100"``)."""

    split: str | None = None
    split_seed: int = 0
    directed: bool = False
    node_features: str | None = None
    hits_k: str = "20,50,100"

    def split_of(self, info: DatasetInfo) -> str:
        """``split``, else NCN/NCNC's 70/10/20 for a graph whose split is
        drawn (Planetoid's), else :data:`~plnlp_core.choices.DEFAULT_SPLIT`."""
        return self.split or (NCN_SPLIT if info.draws_its_split else DEFAULT_SPLIT)


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to do: the flags of ``pipelines/run.py``.

    Attributes:
        dataset (str, optional): An OGB dataset's name, or the path of an
            edge list or split folder (with ``resume``, the run's by default).
        preset (str, optional): Settings to start from (default: ``paper``,
            or ``default`` for a graph of one's own).
        config_file (Path, optional): A YAML mapping of settings over the preset.
        overrides (tuple): ``KEY=VALUE`` settings over both.
        model (str): ``plnlp`` or ``heuristic:<name>``.
        runs (int): Seeds, from ``seed`` (default: the config's) on.
        graph (GraphFlags): How a graph of one's own is read.
        workers (WorkerGroup): The Ray Train workers of each training; by
            default one, holding the local Ray's CPUs (one CPU on a cluster
            at ``RAY_ADDRESS``: see :func:`pipelines.runtime.ray_cluster.sized_workers`).
        max_failures (int): Restarts of a dead worker group.
        experiment (str, optional): The MLflow experiment.
        data_root (str, optional): The folder or URI holding OGB datasets.
        work_dir (str, optional): The folder or URI of stage outputs and checkpoints.
        resume (str, optional): The MLflow run that goes on, in its own
            experiment, with its data root and work folder unless given.
        register (str, optional): The registered model the result joins.
        yes (bool): Run a preset made for a GPU on CPUs without asking.
        verbose (bool): Show Ray's and MLflow's own lines.
    """

    dataset: str | None
    preset: str | None = None
    config_file: Path | None = None
    overrides: tuple[str, ...] = ()
    model: str = "plnlp"
    runs: int = 1
    seed: int | None = None
    graph: GraphFlags = GraphFlags()
    workers: WorkerGroup = WorkerGroup(cpus_per_worker=None)
    max_failures: int = 3
    experiment: str | None = None
    data_root: str | None = None
    work_dir: str | None = None
    resume: str | None = None
    register: str | None = None
    yes: bool = False
    verbose: bool = False


@dataclass(frozen=True)
class SweepRequest:
    """What a sweep is asked to do: the flags of ``pipelines/tune.py``.

    Attributes:
        dataset (str, optional): An OGB dataset's name, or the path of one's
            own graph (with ``resume``, the sweep's by default).
        space (Path, optional): The ``tune_spaces/*.yaml`` file (a new sweep).
        resume (str, optional): The interrupted sweep's MLflow run that goes on.
        overrides (tuple): ``KEY=VALUE`` settings fixed for every trial.
        num_samples (int, optional): Trials (default: the space's).
        max_concurrent (int, optional): Trials at once (default: the space's,
            else what the cluster holds).
        num_workers (int, optional): Ray Train workers per trial.
        cpus_per_worker (int, optional): CPUs each trial's worker holds.
        gpus_per_worker (float, optional): GPUs each trial's worker holds.
        trials_per_gpu (int or str, optional): Trials sharing each GPU (a
            worker holds ``1 / trials_per_gpu`` of one), or ``auto``: as many
            as fit (see :mod:`pipelines.planning.gpu_packing`).
        max_failures (int): Restarts of a trial's dead worker group.
        experiment (str, optional): The MLflow experiment.
        data_root (str, optional): The folder or URI holding OGB datasets.
        work_dir (str, optional): The folder or URI of stage outputs,
            checkpoints and Ray Tune's state.
        register (str, optional): The registered model the best trial joins.
        graph (GraphFlags): How a graph of one's own is read.
        verbose (bool): Show Ray's, Tune's and MLflow's own lines.
    """

    dataset: str | None
    space: Path | None = None
    resume: str | None = None
    overrides: tuple[str, ...] = ()
    num_samples: int | None = None
    max_concurrent: int | None = None
    num_workers: int | None = None
    cpus_per_worker: int | None = None
    gpus_per_worker: float | None = None
    trials_per_gpu: int | str | None = None
    max_failures: int = 3
    experiment: str | None = None
    data_root: str | None = None
    work_dir: str | None = None
    register: str | None = None
    graph: GraphFlags = GraphFlags()
    verbose: bool = False


@dataclass(frozen=True)
class GraphSource:
    """What ``--dataset`` names: an OGB dataset, or (with ``path``) a graph
    of one's own, an edge list or a split folder."""

    info: DatasetInfo
    path: Path | None = None
    num_edges: int | None = None

    @property
    def presets(self) -> str:
        """The presets file: ``<dataset>.yaml``, or ``own.yaml``."""
        return presets_file(self.info.name, self.path is not None)

    @property
    def default_preset(self) -> str:
        """``paper`` for an OGB dataset, the recipe of its mean degree for a
        Planetoid graph; for a graph of one's own ``default``, ``features``
        or ``sparse_features``, or ``sampled`` for a large one
        (:func:`default_preset`)."""
        return default_preset(self.path is not None, self.num_edges, self.info.feature_dim > 0,
                              self.info.name, self.info.mean_degree)

    @property
    def preset_choice(self) -> str | None:
        """Why a graph of one's own, or a Planetoid graph, starts from its
        default preset."""
        if self.num_edges is not None:
            return preset_choice(self.num_edges, self.info.feature_dim > 0,
                                 self.info.mean_degree)
        if self.info.draws_its_split:
            return planetoid_choice(self.info.name)
        return None

    @property
    def label(self) -> str:
        """How a run's tags name it: a graph of one's own by its absolute
        path, an OGB dataset by its name."""
        return str(self.path.resolve()) if self.path else self.info.name


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
        checkpoints (str, optional): The folder of the resumed run's training
            checkpoints (the parent of its ``plnlp.checkpoints`` tag), else
            the work folder's.
    """

    request: RunRequest
    config: PLNLPConfig
    source: GraphSource
    run_id: str | None = None
    runs: int = 1
    children: dict[int, str] = field(default_factory=dict)
    finished: dict[int, dict[str, float]] = field(default_factory=dict)
    checkpoints: str | None = None

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

    def changed_settings(self) -> dict[str, object]:
        """The settings whose values differ from the preset's (by the
        config file, ``--set`` or ``--seed``)."""
        preset = PLNLPConfig.from_mapping(with_graph_node_input(
            {**load_preset(self.source.presets, self.preset), "dataset": self.source.info.name},
            self.source.info.feature_dim)).to_dict()
        return {key: value for key, value in self.config.to_dict().items()
                if preset.get(key) != value}

    @property
    def node_input_choice(self) -> str:
        """Which node input the run trains on, and why (see
        :func:`~pipelines.planning.input_choice.node_input_choice`)."""
        request = self.request
        user = parse_overrides(request.overrides)
        if request.config_file is not None:
            user |= read_mapping(request.config_file, "config")
        return node_input_choice(self.config.node_input, self.preset,
                                 load_preset(self.source.presets, self.preset), user,
                                 self.source.info)

    def params(self) -> dict[str, object]:
        """What a run logs beside its settings: the preset it started from
        and its model, and, for PLNLP, the seeds, the restarts allowed, the
        worker group (a heuristic is one CPU task) and why it trains on its
        node input."""
        chosen = {} if self.request.preset or self.source.preset_choice is None \
            else {"preset_choice": self.source.preset_choice}
        if self.model != "plnlp":
            return {"model": self.model, "preset": self.preset, **chosen}
        return {"model": self.model, "preset": self.preset, "runs": self.runs,
                "max_failures": self.request.max_failures, **asdict(self.request.workers),
                **chosen, "node_input_choice": self.node_input_choice}


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep does.

    Attributes:
        request (SweepRequest): What it was asked; with ``resume``, with the
            dataset, data root and work folder the sweep's run recorded
            where the flags said nothing.
        source (GraphSource): Its graph.
        space (SearchSpace): Its checked search space: the ``--space`` file
            with the command line's settings on top, or the resumed sweep's
            as its run recorded it; each trial's resources among them.
        experiment (str): The MLflow experiment: ``--experiment``, else
            ``plnlp-<dataset>-tune``, or the resumed sweep's.
    """

    request: SweepRequest
    source: GraphSource
    space: SearchSpace
    experiment: str

    @property
    def run_id(self) -> str | None:
        """The sweep's MLflow run that goes on (``resume``)."""
        return self.request.resume

    @property
    def run_name(self) -> str:
        """The name of a new sweep's MLflow run: ``<dataset>-sweep``."""
        return f"{self.source.info.name}-sweep"

    @property
    def resources(self) -> Resources:
        """What each trial's training holds."""
        return self.space.resources

    def with_resources(self, resources: Resources) -> "SweepPlan":
        """This plan with each trial holding ``resources`` (the GPU share
        :func:`pipelines.planning.gpu_packing.pack_trials` gives)."""
        return dataclasses.replace(self, space=self.space.with_resources(resources))
