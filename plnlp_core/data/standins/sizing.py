"""How big a stand-in is: the named sizes of each dataset, scaled ones, and
the checks that refuse a size that cannot be generated (too few or too many
edges, more memory than is available) before any work starts."""
from dataclasses import dataclass, replace
from pathlib import Path

from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.errors import PLNLPError

SPLIT_TYPES = {"ddi": "target", "collab": "time", "ppa": "throughput", "citation2": "time"}
"""The datasets that have a stand-in, with the folder under ``split/`` of each."""

CHUNK = 1 << 22
"""Entries handled at once where a whole array is not needed."""
_PICKLE_COPIES = 4.5


@dataclass(frozen=True)
class StandinSize:
    """How big a stand-in is.

    Args:
        num_nodes (int): Nodes.
        train (int): Training edges (each undirected edge counted once).
        valid (int): Validation positives; for citation2, source nodes with
            one positive target each.
        test (int): Test positives, counted as :obj:`valid`.
        valid_neg (int): Validation negatives; for citation2, negative
            targets per source.
        test_neg (int): Test negatives, counted as :obj:`valid_neg`.
        feature_dim (int): Node feature columns (0: no ``node-feat`` file);
            loaders expect the dataset's own width, that of :obj:`SIZES`.
    """

    num_nodes: int
    train: int
    valid: int
    test: int
    valid_neg: int
    test_neg: int
    feature_dim: int = 0

    @property
    def positives(self) -> int:
        """Training, validation and test positives together."""
        return self.train + self.valid + self.test


SIZES: dict[str, dict[str, StandinSize]] = {
    "ddi": {"tiny": StandinSize(60, 320, 40, 40, 40, 40),
            "real": StandinSize(4_267, 1_067_911, 133_489, 133_489, 101_882, 95_599)},
    "collab": {"tiny": StandinSize(50, 240, 30, 30, 30, 30, 128),
               "real": StandinSize(235_868, 1_179_052, 60_084, 46_329, 100_000, 100_000, 128)},
    "ppa": {"tiny": StandinSize(100, 800, 100, 100, 100, 100, 58),
            "real": StandinSize(576_289, 21_231_931, 6_062_562, 3_031_780, 3_000_000,
                                3_000_000, 58)},
    "citation2": {"tiny": StandinSize(50, 240, 30, 30, 1000, 1000, 128),
                  "real": StandinSize(2_927_963, 30_387_995, 86_596, 86_596, 1000, 1000, 128)},
}


def standin_size(dataset: str, size: str = "tiny", scale: float = 1.0) -> StandinSize:
    """The named size of ``dataset`` (``"tiny"`` or ``"real"``), with nodes,
    positives and negative pairs multiplied by ``scale`` (negatives per
    source and the feature dimension stay), each at least 1.

    Args:
        dataset (str): ``ddi``, ``collab``, ``ppa`` or ``citation2``.
        size (str): A name in :obj:`SIZES`.
        scale (float): A factor, e.g. ``0.01`` for a 1/100 graph.
    """
    sizes = SIZES[standin_info(dataset).name]
    if size not in sizes:
        raise PLNLPError(f"unknown stand-in size {size!r}; choose one of: {', '.join(sizes)}.")
    if not scale > 0:
        raise PLNLPError(f"the stand-in scale must be a positive number, not {scale}.")
    base = sizes[size]
    negatives = (base.valid_neg, base.test_neg)
    if not standin_info(dataset).directed:  # citation2's negatives are per source
        negatives = (_scaled(base.valid_neg, scale), _scaled(base.test_neg, scale))
    return replace(base, num_nodes=max(2, _scaled(base.num_nodes, scale)),
                   train=_scaled(base.train, scale), valid=_scaled(base.valid, scale),
                   test=_scaled(base.test, scale), valid_neg=negatives[0], test_neg=negatives[1])


def estimate_standin_bytes(dataset: str, size: StandinSize) -> int:
    """The memory generating ``size`` takes at its peak beyond the
    interpreter's own, in bytes: the larger of drawing the edges (the draws,
    their keys and sorted copies) and saving the largest split while every
    split is held (pickle protocol 2, which legacy ``torch.save`` uses, holds
    about four copies of the arrays it writes), plus one chunk of features.
    It lies 5-15% above the peaks measured on the real ppa and citation2,
    and further above on small sizes."""
    info = standin_info(dataset)
    edges = 8 * size.positives
    drawing = 7 * edges
    if info.directed:
        negatives = 8 * max(size.valid, size.test) * (max(size.valid_neg, size.test_neg) + 2)
        largest, held = max(16 * size.train, negatives), 3 * edges + negatives
    else:
        per_edge = 16 + 8 * (info.edge_weights + info.edge_years)
        largest = max(per_edge * size.train, per_edge * size.valid + 16 * size.valid_neg,
                      per_edge * size.test + 16 * size.test_neg)
        held = per_edge * size.positives + 16 * (size.valid_neg + size.test_neg)
    saving = held + _PICKLE_COPIES * largest
    features = 32 * CHUNK if size.feature_dim else 0  # one chunk of rows as numbers and text
    return int(max(drawing, saving)) + features + (64 << 20)


def available_memory_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or ``None`` where it
    cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_standin_size(dataset: str, size: StandinSize) -> None:
    """Raises :class:`PLNLPError` if ``size`` cannot be generated: counts
    below one, more edges than half the node pairs, or a memory estimate
    above the available memory."""
    info = standin_info(dataset)
    counts = (size.train, size.valid, size.test, size.valid_neg, size.test_neg)
    if size.num_nodes < 2 or min(counts) < 1 or size.feature_dim < 0:
        raise PLNLPError(f"{describe(info, size)} needs at least 2 nodes and one edge, "
                         "positive and negative in every split.")
    if size.num_nodes > 3_000_000_000:
        raise PLNLPError(f"{describe(info, size)} has too many nodes; use at most "
                         "3,000,000,000.")
    pairs = size.num_nodes * (size.num_nodes - 1) // (1 if info.directed else 2)
    if size.positives > pairs // 2:
        raise PLNLPError(f"{describe(info, size)} would need {size.positives:,} of its "
                         f"{pairs:,} node pairs as edges; use at most half, with more nodes "
                         "or fewer edges.")
    needed, available = estimate_standin_bytes(dataset, size), available_memory_bytes()
    if available is not None and needed > available:
        raise PLNLPError(f"{describe(info, size)} needs about {needed / 2**30:.1f} GiB of "
                         f"memory to generate but only {available / 2**30:.1f} GiB is "
                         "available; choose a smaller size or scale.")


def standin_info(dataset: str) -> DatasetInfo:
    info = DATASETS.get(dataset)
    if info.name not in SPLIT_TYPES:
        raise PLNLPError(f"there is no stand-in for {dataset!r}; choose one of: "
                         f"{', '.join(SPLIT_TYPES)}.")
    return info


def _scaled(count: int, scale: float) -> int:
    return max(1, round(count * scale))


def describe(info: DatasetInfo, size: StandinSize) -> str:
    return (f"the {info.ogb_name} stand-in of {size.num_nodes:,} nodes and {size.train:,} "
            "training edges")
