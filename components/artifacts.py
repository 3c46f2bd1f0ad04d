"""The typed inputs and outputs passed between stages."""
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class DatasetArtifact:
    """Canonical splits of a dataset (``load``'s output).

    ``directory`` holds ``train.parquet`` and ``valid_pos.parquet`` (``src``,
    ``dst`` and, where the dataset has them, ``weight`` and ``year``),
    ``valid_neg.parquet`` and ``test_{pos,neg}.parquet`` (``src``, ``dst``),
    ``node_features.parquet`` (``x``, one list per node) when the dataset has
    features, and ``meta.json`` (``DatasetMeta``).
    """

    directory: str
    meta: "DatasetMeta"


@dataclass(frozen=True)
class DatasetMeta:
    """The small description ``meta.json`` holds."""

    dataset: str
    num_nodes: int
    directed: bool
    feature_dim: int
    metric: str
    num_train_edges: int

    def write(self, directory: Path) -> None:
        (directory / "meta.json").write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, directory: Path) -> "DatasetMeta":
        return cls(**json.loads((directory / "meta.json").read_text()))


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
class TrainArtifact:
    """The best checkpoint (``train``'s output): ``directory`` holds
    ``model.pt`` (a ``state_dict``), chosen by validation."""

    checkpoint_dir: str
    best_epoch: int
    best_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)


@contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yields a scratch folder beside ``final`` that becomes ``final`` only
    when the block succeeds, so no half-written output is ever trusted."""
    scratch = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.partial")
    scratch.mkdir(parents=True)
    try:
        yield scratch
        if final.exists():
            shutil.rmtree(final)
        os.replace(scratch, final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
