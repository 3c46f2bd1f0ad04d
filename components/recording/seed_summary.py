"""A multi-seed run (``--runs N``) summarised as a paper's table reads: one
line per seed as it ends, then ``mean ± std`` over the seeds.

The parent run holds, for each final metric ``final_<split>_<metric>`` of
its seeds, ``final_<split>_<metric>_mean`` and ``_std`` (the sample
standard deviation, as OGB's and NCN's tables give it) and ``final_runs``,
how many seeds they summarise."""
import statistics
from collections.abc import Sequence

RUNS_KEY = "final_runs"


def summary_metrics(finals: Sequence[dict[str, float]]) -> dict[str, float]:
    """``<key>_mean`` and ``<key>_std`` of each final metric over runs, and
    the number of runs."""
    summary: dict[str, float] = {RUNS_KEY: len(finals)}
    for key in finals[0]:
        values = [final[key] for final in finals]
        summary[f"{key}_mean"] = statistics.fmean(values)
        summary[f"{key}_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return summary


def seed_line(seed: int, final: dict[str, float], main_metric: str) -> str:
    """What a seed prints as it ends: ``seed 3  test hits_100 88.52  valid
    hits_100 95.10`` (percent, as the summary's line)."""
    return f"seed {seed}  " + "  ".join(
        f"{split} {main_metric} {100 * final[key]:.2f}" for split in ("test", "valid")
        if (key := f"final_{split}_{main_metric}") in final)


def spread_line(summary: dict[str, float], split: str, metric: str, plus_minus: str = "+-") -> \
        str | None:
    """``test hits_100 88.20 +- 1.08 (10 runs)``: the mean and standard
    deviation of ``summary``'s ``final_<split>_<metric>``, in percent to
    two decimals; None for a run of one seed."""
    key = f"final_{split}_{metric}"
    if f"{key}_mean" not in summary:
        return None
    runs = int(summary.get(RUNS_KEY, 0))
    return (f"{split} {metric} {100 * summary[f'{key}_mean']:.2f} {plus_minus} "
            f"{100 * summary[f'{key}_std']:.2f} ({runs} runs)")


def paired(summary: dict[str, float]) -> dict[str, tuple[float, float | None]]:
    """Each metric of ``summary`` as ``(value, None)``, or for a
    ``<key>_mean`` beside its ``<key>_std``, ``<key>`` as ``(mean, std)``."""
    pairs: dict[str, tuple[float, float | None]] = {}
    for key, value in summary.items():
        if key.endswith("_std") and key.removesuffix("_std") + "_mean" in summary:
            continue
        stem = key.removesuffix("_mean")
        if key.endswith("_mean") and f"{stem}_std" in summary:
            pairs[stem] = (value, summary[f"{stem}_std"])
        else:
            pairs[key] = (value, None)
    return pairs
