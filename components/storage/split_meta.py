"""What a split's ``meta.json`` holds: the small description written beside
its Parquet files (see :mod:`components.storage.parquet_io`)."""
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from plnlp_core.data.datasets import DATASETS, DatasetInfo

META_FILE = "meta.json"


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
