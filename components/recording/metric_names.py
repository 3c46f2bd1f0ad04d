"""The names MLflow shows for what a run logs once.

MLflow's run page draws one chart per metric and groups the charts by the
part of a name before ``/``; names without one come first. The per-epoch
curves (``train_loss``, ``valid_<metric>``, ``test_<metric>``,
``epoch_seconds``) keep their plain names, so the page opens on them; what
a run logs once goes to a group of its own:

* ``final/<split>_<metric>``: the best epoch's evaluation (a multi-seed
  parent's ``final/<split>_<metric>_mean`` and ``_std``);
* ``best/<name>``: a sweep's best trial;
* ``startup/<phase>_s``: where the start of the job went;
* ``timing/<name>``: ``fit_seconds``, ``train_stage_seconds`` and
  ``best_epoch``.

The code keeps the underscore names (``final_valid_hits_20``); this module
is the one place that maps them to and from MLflow's.
"""
import re
from collections.abc import Mapping

GROUPS = {"final_": "final/", "best_": "best/", "startup_": "startup/"}
TIMINGS = ("best_epoch", "fit_seconds", "train_stage_seconds")
TIMING_GROUP = "timing/"


def logged_name(name: str) -> str:
    """The name MLflow holds ``name`` under (``final_test_hits_20`` ->
    ``final/test_hits_20``); a per-epoch name is its own."""
    if name in TIMINGS:
        return TIMING_GROUP + name
    for prefix, group in GROUPS.items():
        if name.startswith(prefix):
            return group + name.removeprefix(prefix)
    return name


def code_name(logged: str) -> str:
    """The inverse of :func:`logged_name`."""
    if logged.startswith(TIMING_GROUP):
        return logged.removeprefix(TIMING_GROUP)
    for prefix, group in GROUPS.items():
        if logged.startswith(group):
            return prefix + logged.removeprefix(group)
    return logged


def logged_metrics(metrics: Mapping[str, float]) -> dict[str, float]:
    """``metrics`` under the names MLflow holds them by."""
    return {logged_name(name): float(value) for name, value in metrics.items()}


def run_metrics(logged: Mapping[str, float]) -> dict[str, float]:
    """A run's metrics as MLflow holds them (``run.data.metrics``), under
    the code's names."""
    return {code_name(name): value for name, value in logged.items()}


def natural_order(name: str) -> list[str | int]:
    """A sort key of metric names with their numbers as numbers: ``hits_20``
    before ``hits_100``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
