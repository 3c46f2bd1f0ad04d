"""What the benchmark times: each dataset and preset, the graph it runs on
(the real dataset or a stand-in in OGB's layout) and how many batches."""
import contextlib
import functools
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.planning.presets import load_preset  # YAML only: no Ray, no MLflow
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, LinkSplit, resolve_data_root
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.data.standins import cached_standin, standin_size


@dataclass
class Workload:
    """One dataset and preset to time, and how many batches.

    Attributes:
        source (str): ``"real"`` (the data root), or a stand-in's size:
            ``"real-size"``, ``"tiny"`` or a scale of the real size.
        overrides (dict): Settings over the preset's.
    """

    name: str
    dataset: str
    preset: str
    source: str
    batches: int
    overrides: dict = field(default_factory=dict)


def workloads(quick: bool) -> list[Workload]:
    """The training workloads: ddi's presets on the real ddi, collab's and
    ppa's on stand-ins of their real size, and the edge level; small
    stand-ins and two batches each with ``quick``."""
    if quick:
        return [
            Workload("ddi smoke", "ddi", "smoke", "real", 2),
            Workload("ddi cpu", "ddi", "cpu", "real", 2),
            Workload("collab paper, walks", "collab", "paper", "tiny", 2,
                     {"walk_rounds": 1, "batch_size": 256}),
            Workload("ppa paper", "ppa", "paper", "0.002", 2, {"batch_size": 4096}),
            Workload("ddi cpu, edge level", "ddi", "cpu", "real", 2, {"encoder_level": "edge"}),
            Workload("ppa ene (edge level)", "ppa", "ene", "0.002", 2, {"batch_size": 4096}),
        ]
    return [
        Workload("ddi smoke", "ddi", "smoke", "real", 17),
        Workload("ddi cpu", "ddi", "cpu", "real", 17),
        Workload("ddi paper", "ddi", "paper", "real", 3),
        Workload("collab paper, walks", "collab", "paper", "real-size", 3, {"walk_rounds": 1}),
        Workload("ppa paper", "ppa", "paper", "real-size", 1),
        Workload("ddi cpu, edge level", "ddi", "cpu", "real", 17, {"encoder_level": "edge"}),
        Workload("ppa ene (edge level)", "ppa", "ene", "real-size", 1),
    ]


def preset_config(workload: Workload) -> PLNLPConfig:
    """The workload's preset with its overrides, validated."""
    config = PLNLPConfig.from_mapping({**load_preset(workload.dataset, workload.preset),
                                       **workload.overrides, "dataset": workload.dataset})
    config.validate()
    return config


@functools.cache
def load_split(dataset: str, source: str, data_root: str | None) -> LinkSplit:
    """The split of ``dataset`` from ``source`` (see :class:`Workload`), read
    once a process; ``data_root`` is the real datasets' folder (``None``:
    ``$PLNLP_DATA_ROOT``, else ``./data``). The reader's messages go to stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        return load_ogb(DATASETS.get(dataset), _root(dataset, source, data_root))


def _root(dataset: str, source: str, data_root: str | None) -> Path:
    if source == "real":
        return resolve_data_root(data_root)
    if source in ("tiny", "real-size"):
        return cached_standin(dataset, source.replace("real-size", "real"))
    return cached_standin(dataset, standin_size(dataset, "real", float(source)))
