"""The catalogue of link-prediction datasets: what is known of each before
loading it (:class:`DatasetInfo`, the table :data:`DATASETS`), the canonical
form every loader returns (:class:`LinkSplit`), and where data lives. OGB's
on-disk layout is read by :mod:`plnlp_core.data.ogb_reader`."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from plnlp_core.registry import Registry

if TYPE_CHECKING:  # the catalogue is read before torch is imported
    from torch import Tensor

SPLIT_PARTS = ("train", "valid", "test")


@dataclass(frozen=True)
class DatasetInfo:
    """What is known of a dataset before loading it. ``metric`` is OGB's
    (``hits@20``, ``mrr``), or ``auc`` for a graph of one's own (see
    :mod:`plnlp_core.data.own_graph`), which is also scored by Hits@K for each
    cut-off in ``hits_k``."""

    name: str
    ogb_name: str
    metric: str
    directed: bool
    feature_dim: int
    edge_weights: bool = False
    edge_years: bool = False
    hits_k: tuple[int, ...] = (20, 50, 100)
    family: str = "ogb"  # or "planetoid" (plnlp_core.data.planetoid)
    extra_metrics: tuple[str, ...] = ()  # "auc", "mrr" beside the Hits@K of a Hits@K dataset
    mean_degree: float | None = None  # 2 x edges / nodes, where known before the graph is read
    feature_entries: int | None = None  # the node features' set entries, where kept sparse

    @property
    def dir_name(self) -> str:
        return self.ogb_name.replace("-", "_")

    @property
    def planetoid_name(self) -> str:
        """PyG's name of a Planetoid graph (``Cora``)."""
        return self.ogb_name.removeprefix("planetoid-")

    @property
    def draws_its_split(self) -> bool:
        """Whether the split is drawn from the graph (a Planetoid graph's,
        anew for each of ``--runs``), not published with it."""
        return self.family == "planetoid"

    @property
    def metric_keys(self) -> list[str]:
        """Metric names as logged: ``hits_20``, ``hits_50``, ``hits_100``, or
        ``mrr``, or ``auc`` followed by the Hits@K keys."""
        if self.metric == "mrr":
            return ["mrr"]
        hits = [f"hits_{k}" for k in self.hits_k]
        return ["auc", *hits] if self.metric == "auc" else [*hits, *self.extra_metrics]

    @property
    def main_metric_key(self) -> str:
        return self.metric.replace("@", "_")


DATASETS: Registry[DatasetInfo] = Registry("dataset")
for _info in (
    DatasetInfo("ddi", "ogbl-ddi", "hits@20", directed=False, feature_dim=0),
    DatasetInfo("collab", "ogbl-collab", "hits@50", directed=False, feature_dim=128,
                edge_weights=True, edge_years=True),
    DatasetInfo("ppa", "ogbl-ppa", "hits@100", directed=False, feature_dim=58),
    DatasetInfo("citation2", "ogbl-citation2", "mrr", directed=True, feature_dim=128),
    # Planetoid's, scored as NCN/NCNC score them (Hits@100 against as many negatives as
    # positives) and as GAE and HeaRT do (AUC, MRR)
    *(DatasetInfo(name.lower(), f"planetoid-{name}", "hits@100", directed=False,
                  feature_dim=dim, family="planetoid", extra_metrics=("auc", "mrr"),
                  mean_degree=2 * edges / nodes)
      for name, dim, nodes, edges in (("Cora", 1433, 2708, 5278), ("CiteSeer", 3703, 3327, 4552),
                                      ("PubMed", 500, 19717, 44324))),
):
    DATASETS.register(_info.name)(_info)


@dataclass
class LinkSplit:
    """A dataset in canonical form. Pairs are ``[M, 2]`` long tensors; for
    MRR datasets the negatives of positive ``i`` are rows
    ``i * K ... (i + 1) * K - 1`` of the negatives. ``*_weight`` (float)
    and ``*_year`` (long) are ``[M]`` where the dataset has them (ogbl-collab),
    else ``None``."""

    info: DatasetInfo
    num_nodes: int
    x: Tensor | None
    train_pos: Tensor
    train_weight: Tensor | None
    train_year: Tensor | None
    valid_pos: Tensor
    valid_neg: Tensor
    test_pos: Tensor
    test_neg: Tensor
    valid_weight: Tensor | None = None
    valid_year: Tensor | None = None


def data_root_setting(data_root: str | None) -> str:
    """``data_root`` if given, else ``$PLNLP_DATA_ROOT``, else ``data``: a
    folder, or an object store's URI (which the pipeline's load stage reads)."""
    return data_root or os.environ.get("PLNLP_DATA_ROOT") or "data"


def resolve_data_root(data_root: str | None) -> Path:
    """:func:`data_root_setting` as a local folder."""
    return Path(data_root_setting(data_root))


def cache_dir() -> Path:
    """Where derived files go: ``$PLNLP_CACHE_DIR``, else ``~/.cache/plnlp``."""
    return Path(os.environ.get("PLNLP_CACHE_DIR") or Path.home() / ".cache" / "plnlp")
