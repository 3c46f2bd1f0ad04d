"""The typed inputs and outputs passed between stages."""
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from plnlp_core.data.datasets import DATASETS, DatasetInfo

META_FILE = "meta.json"


@dataclass(frozen=True)
class DatasetArtifact:
    """Canonical splits of a dataset (``load``'s output).

    ``directory`` holds ``train.parquet`` and ``valid_pos.parquet`` (``src``,
    ``dst`` and, where the dataset has them, ``weight`` and ``year``),
    ``valid_neg.parquet`` and ``test_{pos,neg}.parquet`` (``src``, ``dst``),
    ``node_features.parquet`` (``x``, one list per node) when the dataset has
    features, ``meta.json`` (``DatasetMeta``) and the stage cache's
    ``manifest.json`` (see :mod:`components.storage.stage_cache`).
    """

    directory: str
    meta: "DatasetMeta"


@dataclass(frozen=True)
class DatasetMeta:
    """The small description ``meta.json`` holds; ``info`` is the whole
    :class:`DatasetInfo` of a graph outside OGB's registry (a user's own);
    ``categories`` is what the node features hold as one categorical column
    (:func:`plnlp_core.nn.node_input.summarize_categories`), so that a bad
    ``feature_categories`` is refused before training."""

    dataset: str
    num_nodes: int
    directed: bool
    feature_dim: int
    metric: str
    num_train_edges: int
    info: dict | None = None
    categories: dict | None = None  # the node features as one categorical column, checked

    def write(self, directory: Path) -> None:
        (directory / META_FILE).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, directory: Path) -> "DatasetMeta":
        return cls.from_json((directory / META_FILE).read_text())

    @classmethod
    def from_json(cls, text: str) -> "DatasetMeta":
        return cls(**json.loads(text))

    def dataset_info(self) -> DatasetInfo:
        """The dataset's :class:`DatasetInfo`: its own, or OGB's registered one."""
        if self.info is None:
            return DATASETS.get(self.dataset)
        return DatasetInfo(**{**self.info, "hits_k": tuple(self.info["hits_k"])})


@dataclass(frozen=True)
class WalkArtifact:
    """Random-walk pairs (``augment``'s output): ``rounds`` independent
    sets, each a folder ``round-<r>`` of Parquet parts with columns ``src``,
    ``dst``, ``weight`` under ``directory``."""

    directory: str
    num_pairs: int
    rounds: int = 1

    def round_directory(self, index: int) -> Path:
        return Path(self.directory) / f"round-{index:04d}"


@dataclass(frozen=True)
class HeartArtifact:
    """Hard negatives (``heart``'s output) under ``mode`` (``heart`` or
    ``heart_filtered``): ``directory`` holds ``valid.parquet`` and
    ``test.parquet``, one row per positive ranked (``source``, ``target``),
    its ``negatives`` a list of ``num_negatives`` nodes (see
    :func:`plnlp_core.scoring.hard_negatives.hard_negatives`), and
    ``ceiling.json``, what a perfect predictor reaches on them."""

    directory: str
    num_negatives: int
    mode: str = "heart"


CHECKPOINT_FILE = "model.pt"
"""The file of a :class:`TrainArtifact`'s folder that holds the model."""


@dataclass(frozen=True)
class TrainArtifact:
    """The best checkpoint (``train``'s output): ``checkpoint_dir`` holds
    :data:`CHECKPOINT_FILE` (a ``state_dict``), chosen by validation; ``fit_seconds``
    is how long the training loop took, epochs, evaluations, checkpoints and
    reports included (of the last attempt, after a restart); ``startup``
    holds rank 0's start-up marks (see :mod:`components.train.startup`) when the
    last attempt started from scratch."""

    checkpoint_dir: str
    best_epoch: int
    best_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    fit_seconds: float = 0.0
    startup: dict[str, float] = field(default_factory=dict)
