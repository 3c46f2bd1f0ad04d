"""The typed inputs and outputs passed between stages: where an output lives
is a :class:`~components.storage.location.Location` (a folder, local or in
object storage), pickled with the artifact into Ray tasks and workers."""
from dataclasses import dataclass, field
from pathlib import Path

from components.storage.location import Location
from components.storage.split_meta import DatasetMeta


@dataclass(frozen=True)
class DatasetArtifact:
    """Canonical splits of a dataset (``load``'s output).

    ``directory`` holds ``train.parquet`` and ``valid_pos.parquet`` (``src``,
    ``dst`` and, where the dataset has them, ``weight`` and ``year``),
    ``valid_neg.parquet`` and ``test_{pos,neg}.parquet`` (``src``, ``dst``),
    the training graph's CSR adjacency and degrees (``adj_crow.npy``,
    ``adj_col.npy``, ``adj_values.npy``, ``degree.npy``) and, when the
    dataset has features, ``node_features.npy`` (``[N, F]``), memory-mapped
    by the workers (see :mod:`components.storage.graph_files`),
    ``meta.json`` (:class:`~components.storage.split_meta.DatasetMeta`)
    and the stage cache's ``manifest.json`` (see :mod:`components.storage.stage_cache`).
    """

    directory: Location
    meta: DatasetMeta


@dataclass(frozen=True)
class WalkArtifact:
    """Random-walk pairs (``augment``'s output): ``rounds`` independent
    sets, each a folder ``round-<r>`` of Parquet parts with columns ``src``,
    ``dst``, ``weight`` under ``directory``."""

    directory: Location
    num_pairs: int
    rounds: int = 1

    def round_directory(self, index: int) -> Path:
        """The folder of round ``index`` of walks held in a local folder."""
        return self.directory.local_path() / f"round-{index:04d}"


@dataclass(frozen=True)
class HeartArtifact:
    """Hard negatives (``heart``'s output) under ``mode`` (``heart`` or
    ``heart_filtered``): ``directory`` holds ``valid.parquet`` and
    ``test.parquet``, one row per positive ranked (``source``, ``target``),
    its ``negatives`` a list of ``num_negatives`` nodes (see
    :func:`plnlp_core.scoring.hard_negatives.hard_negatives`), and
    ``ceiling.json``, what a perfect predictor reaches on them."""

    directory: Location
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

    checkpoint_dir: Location
    best_epoch: int
    best_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    fit_seconds: float = 0.0
    startup: dict[str, float] = field(default_factory=dict)
