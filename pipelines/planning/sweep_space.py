"""A sweep's search space: a ``tune_spaces/*.yaml`` file, checked whole
before any trial starts, and its translation into Ray Tune's terms::

    preset: cpu                 # the settings not searched (``--set`` fixes more)
    metric: valid_hits_20       # a validation metric: the test set never steers a sweep
    mode: max
    num_samples: 8              # trials; with ``search: grid``, repeats of the grid
    search: random              # random | grid | optuna (Optuna's TPE)
    scheduler:                  # absent: every trial runs all its epochs
      asha: {grace_period: 5, reduction_factor: 2, max_t: 140}
    max_concurrent: 2           # absent: as many trials as the cluster holds at once
    resources: {workers: 1, cpus_per_worker: 1, gpus_per_worker: 0.5}
    space:                      # each searched setting takes one distribution
      lr: {loguniform: [0.001, 0.02]}
      loss: {choice: [auc, ce]}

Distributions: ``choice`` and ``grid`` (lists of values), ``uniform`` and
``loguniform`` ([low, high]), ``randint`` ([low, high], high excluded).
ASHA's time is the epoch: a trial reports at every evaluated epoch.

A part may be chosen among built-in ones and one's own
(``encoder: {choice: [sage, "my_parts.layers:GINLayer"]}``), and a part's own
setting searched as ``<kind>_options.<key>`` (``encoder_options.eps: {choice:
[0, 0.1]}``), checked with each choice of its part the space makes (a
built-in part takes none of them).
"""
import copy
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from components.train.worker_group import WorkerGroup
from plnlp_core.config import OPTION_SETTINGS, PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.preflight.checks import check_config

KEYS = ("preset", "metric", "mode", "num_samples", "search", "scheduler", "max_concurrent",
        "resources", "space")
SEARCHES = ("random", "grid", "optuna")
LISTS, BOUNDS = ("choice", "grid"), ("uniform", "loguniform", "randint")
ASHA_KEYS = ("grace_period", "reduction_factor", "max_t")
RESOURCE_KEYS = ("workers", "cpus_per_worker", "gpus_per_worker")
SETTINGS = tuple(field.name for field in fields(PLNLPConfig) if field.name != "dataset")


@dataclass(frozen=True)
class Resources:
    """What one trial's training holds: its Ray Train worker group."""

    workers: int = 1
    cpus_per_worker: int = 1
    gpus_per_worker: float = 0.0

    def worker_group(self) -> WorkerGroup:
        use_gpu = self.gpus_per_worker > 0
        return WorkerGroup(self.workers, self.cpus_per_worker, use_gpu,
                           self.gpus_per_worker if use_gpu else 1.0)


class SearchSpace:
    """A checked search space file.

    Args:
        path (Path): The ``tune_spaces/*.yaml`` file.
        base (PLNLPConfig): The settings every trial starts from (the file's
            ``preset`` with ``--set`` on top).
        info (DatasetInfo): The dataset swept, for its validation metrics.
        data (dict): The file's mapping.
        resources (dict): Per-trial resources given on the command line,
            which override the file's.
        preset (str, optional): The preset ``base`` started from.
    """

    def __init__(self, path: Path, base: PLNLPConfig, info: DatasetInfo, data: dict,
                 resources: dict[str, float] | None = None, preset: str | None = None) -> None:
        self.path, self.base, self.info, self.preset = path, base, info, preset
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            self._refuse(unknown[0], f"is not a key of a search space; allowed: {', '.join(KEYS)}")
        self.metric = self._metric(data.get("metric", f"valid_{info.main_metric_key}"))
        self.mode = self._one_of("mode", data.get("mode", "max"), ("max", "min"))
        self.num_samples = self._count("num_samples", data.get("num_samples", 1))
        self.search = self._one_of("search", data.get("search", "random"), SEARCHES)
        self.max_concurrent = data.get("max_concurrent")
        if self.max_concurrent is not None:
            self._count("max_concurrent", self.max_concurrent)
        self.asha = self._scheduler(data.get("scheduler"))
        self.resources = self._resources({**(data.get("resources") or {}), **(resources or {})})
        self.searched = data.get("space") or {}
        if not isinstance(self.searched, dict) or not self.searched:
            self._refuse("space", "needs at least one searched setting, e.g. "
                                  "`space: {lr: {loguniform: [0.001, 0.01]}}`")
        for key, spec in self.searched.items():
            self._check_setting(key, spec)

    def _refuse(self, key: str, problem: str) -> None:
        raise PLNLPError(f"search space {self.path}: {key} {problem}.")

    def _one_of(self, key: str, value: object, allowed: tuple[str, ...]) -> str:
        if value not in allowed:
            self._refuse(key, f"is {value!r}; allowed: {', '.join(allowed)}")
        return value

    def _count(self, key: str, value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            self._refuse(key, f"is {value!r}; it must be a whole number of at least 1")
        return value

    def _metric(self, metric: object) -> str:
        allowed = [f"valid_{key}" for key in self.info.metric_keys]
        if metric not in allowed:
            self._refuse("metric", f"is {metric!r}, not a validation metric of "
                                   f"{self.info.name} (the test set never steers a sweep); "
                                   f"allowed: {', '.join(allowed)}")
        return metric

    def _scheduler(self, spec: object) -> dict[str, int] | None:
        """ASHA's settings (epochs), or ``None`` when the file names none."""
        if spec is None:
            return None
        if not (isinstance(spec, dict) and list(spec) == ["asha"]):
            self._refuse("scheduler", f"is {spec!r}; allowed: absent, or "
                                      f"`asha: {{{', '.join(ASHA_KEYS)}}}`")
        given = spec["asha"] or {}
        settings = {"grace_period": 1, "reduction_factor": 2, "max_t": self.base.epochs, **given}
        for key in sorted(set(settings) - set(ASHA_KEYS)):
            self._refuse(f"scheduler.asha.{key}", f"is not an ASHA setting; allowed: "
                                                  f"{', '.join(ASHA_KEYS)}")
        for key in ASHA_KEYS:
            self._count(f"scheduler.asha.{key}", settings[key])
        if settings["reduction_factor"] < 2:
            self._refuse("scheduler.asha.reduction_factor", "must be at least 2")
        if settings["max_t"] < settings["grace_period"]:
            if "max_t" in given:
                self._refuse("scheduler.asha.max_t", "must be at least its grace_period")
            print(f"note: search space {self.path}: scheduler.asha.grace_period "
                  f"{settings['grace_period']} is lowered to {settings['max_t']}, the epochs a "
                  "trial runs (max_t defaults to the preset's epochs)", flush=True)
            settings["grace_period"] = settings["max_t"]
        return settings

    def _resources(self, given: dict) -> Resources:
        for key in sorted(set(given) - set(RESOURCE_KEYS)):
            self._refuse(f"resources.{key}", f"is not a resource; allowed: "
                                             f"{', '.join(RESOURCE_KEYS)}")
        resources = Resources(**given)
        self._count("resources.workers", resources.workers)
        self._count("resources.cpus_per_worker", resources.cpus_per_worker)
        gpus = resources.gpus_per_worker
        if not isinstance(gpus, int | float) or gpus < 0 or (gpus > 1 and gpus != int(gpus)):
            self._refuse("resources.gpus_per_worker", f"is {gpus!r}; it must be 0, a fraction "
                                                      "of one GPU, or a whole number")
        return resources

    def _check_setting(self, key: str, spec: object) -> None:
        """Refuses a malformed distribution, and any value it can take that
        would make an impossible config."""
        kinds = (*LISTS, *BOUNDS)
        if not (isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in kinds):
            self._refuse(key, f"must be one of {{{': [...]}, {'.join(kinds)}: [...]}}, "
                              f"got {spec!r}")
        if key not in SETTINGS and key.partition(".")[0] not in OPTION_SETTINGS:
            self._refuse(key, f"is not a setting; valid settings are: {', '.join(SETTINGS)}")
        (kind, values), = spec.items()
        if not isinstance(values, list) or not values:
            self._refuse(key, f"has an empty {kind}; give a non-empty list of values")
        if kind in BOUNDS:
            self._check_bounds(key, kind, values)
            values = [values[0], values[1] - 1] if kind == "randint" else values
        if self.search == "grid" and kind in BOUNDS:
            self._refuse(key, f"is a {kind}, which a grid cannot enumerate; use "
                              "`choice` or `grid`, or `search: random`")
        if self.search == "optuna" and kind == "grid":
            self._refuse(key, "is a grid, which Optuna's search cannot take; use `choice`")
        for value in values:
            for part in self._parts_chosen(key):
                try:
                    check_config(self.base.replace(**part, **{key: value}), self.info)
                except PLNLPError as error:
                    chosen = "".join(f" with {kind} {name!r}" for kind, name in part.items())
                    self._refuse(key, f"cannot take {value!r}{chosen}: {error}".rstrip("."))

    def _parts_chosen(self, key: str) -> list[dict[str, object]]:
        """The parts a searched ``<kind>_options.<key>`` is checked with: each
        the space chooses for its kind, or the base's (``[{}]``)."""
        kind = key.partition("_options.")[0] if "_options." in key else None
        spec = self.searched.get(kind) if kind else None
        if not isinstance(spec, dict) or next(iter(spec), None) not in LISTS:
            return [{}]
        return [{kind: name} for name in next(iter(spec.values())) or []]

    def _check_bounds(self, key: str, kind: str, bounds: list) -> None:
        number = int if kind == "randint" else int | float
        condition = {"uniform": "low < high", "loguniform": "0 < low < high",
                     "randint": "whole numbers low < high"}[kind]
        valid = len(bounds) == 2 and all(
            isinstance(b, number) and not isinstance(b, bool) for b in bounds) \
            and bounds[0] < bounds[1] and (kind != "loguniform" or bounds[0] > 0)
        if not valid:
            self._refuse(key, f"needs {kind}: [low, high] with {condition}, got {bounds!r}")

    def with_resources(self, resources: Resources) -> "SearchSpace":
        """This space with each trial holding ``resources`` instead; this
        one is left as it is."""
        space = copy.copy(self)
        space.resources = resources
        return space

    def check_cluster(self, available: dict[str, float]) -> None:
        """Refuses a trial the cluster can never hold (it would wait forever)."""
        for name, amount in self.resources.worker_group().resources().items():
            if available.get(name, 0) < amount:
                self._refuse("resources", f"ask {amount:g} {name}s per trial but the Ray "
                                          f"cluster has {available.get(name, 0):g}; lower "
                                          "workers, cpus_per_worker or gpus_per_worker")

    def concurrency(self, available: dict[str, float]) -> int:
        """``max_concurrent``, else as many trials as the cluster holds at once."""
        if self.max_concurrent is not None:
            return self.max_concurrent
        needed = self.resources.worker_group().resources()
        return max(1, min(int(available.get(name, 0) // amount)
                          for name, amount in needed.items() if amount > 0))

    def param_space(self) -> dict[str, object]:
        """Ray Tune's distributions of the searched settings (a ``choice``
        becomes a grid axis under ``search: grid``)."""
        from ray import tune

        make = {"choice": tune.grid_search if self.search == "grid" else tune.choice,
                "grid": tune.grid_search, "uniform": lambda b: tune.uniform(*b),
                "loguniform": lambda b: tune.loguniform(*b), "randint": lambda b: tune.randint(*b)}
        return {key: make[kind](values)
                for key, spec in self.searched.items() for kind, values in spec.items()}

    def search_algorithm(self) -> object | None:
        """Optuna's TPE (seeded by the base ``seed``), or Tune's own
        random and grid variants (``None``)."""
        if self.search != "optuna":
            return None
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        return OptunaSearch(sampler=optuna.samplers.TPESampler(seed=self.base.seed))

    def scheduler(self) -> object | None:
        """ASHA over epochs, or ``None`` (every trial runs to its end)."""
        if self.asha is None:
            return None
        from ray.tune.schedulers import ASHAScheduler

        from components.recording.tags import EPOCH

        return ASHAScheduler(time_attr=EPOCH, **self.asha)

    def decision_epochs(self) -> list[int]:
        """The epochs at which ASHA decides (its rungs: ``grace_period``
        times powers of ``reduction_factor`` up to ``max_t``), which a
        trial reports at once; none without a scheduler."""
        if self.asha is None:
            return []
        rungs, epoch = [], self.asha["grace_period"]
        while epoch <= self.asha["max_t"]:
            rungs.append(epoch)
            epoch *= self.asha["reduction_factor"]
        return rungs

    def trial_params(self) -> dict[str, object]:
        """What each trial's run logs beside its settings: the preset and
        the worker group."""
        preset = {} if self.preset is None else {"preset": self.preset}
        return {**preset, **asdict(self.resources.worker_group())}

    def describe(self) -> dict[str, object]:
        """The search settings, as the sweep's MLflow params."""
        preset = {} if self.preset is None else {"preset": self.preset}
        return {**preset, "search_space": str(self.path), "searched": ",".join(self.searched),
                "metric": self.metric, "mode": self.mode, "num_samples": self.num_samples,
                "search": self.search, "scheduler": "asha" if self.asha else "none",
                **{f"asha_{key}": value for key, value in (self.asha or {}).items()},
                "max_concurrent": self.max_concurrent or "cluster",
                **{f"trial_{key}": value for key, value in vars(self.resources).items()}}
