"""How fast the classic heuristics (common neighbours, Adamic-Adar,
resource allocation) score a split's evaluation pairs, and their memory."""
from baselines import heuristic_metrics
from timing import MIB, PeakMemory, timed

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.heuristics import HEURISTICS

EVALUATION_PAIRS = ("valid_pos", "valid_neg", "test_pos", "test_neg")


def time_heuristics(split: LinkSplit, name: str) -> dict:
    """Seconds, pairs per second, peak memory and the test's main metric of
    each heuristic scoring ``split``'s valid and test pairs; ``name`` names
    the graph."""
    pairs = sum(getattr(split, part).size(0) for part in EVALUATION_PAIRS)
    main = f"test_{split.info.main_metric_key}"
    rows = []
    for heuristic in HEURISTICS.names:
        with PeakMemory() as memory:
            seconds, metrics = timed(lambda h=heuristic: heuristic_metrics(h, split))
        rows.append({"graph": name, "heuristic": heuristic, "seconds": seconds,
                     "pairs_per_s": pairs / seconds, "peak_rss_mib": memory.rss / MIB,
                     main: metrics[main]})
    return {"graph": name, "rows": rows}
