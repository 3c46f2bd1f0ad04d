"""What a run prints: the product's own lines, and Ray's and MLflow's only
when they warn or fail (everything with ``--verbose``)."""
import logging
import os
import re
import sys
from collections.abc import Callable
from urllib.parse import quote, urlencode

from components.recording.metric_names import logged_name, natural_order
from components.recording.tags import PARENT_TAG
from components.train.startup import describe_startup
from plnlp_core.errors import without_credentials

# Lines Ray's processes print that say something went wrong.
_TROUBLE = re.compile(r"Error|ERROR|Exception|Traceback|WARNING|Warning|Killed|OOM|died")
# Ray's own notices that look like trouble and are not: a deprecation inside
# Ray Data, and an internal note each Train controller prints at start.
_BENIGN = re.compile(r"RayDeprecationWarning|PreemptionWatcher|exclude_resources")
# The product's own lines, printed by the training worker (a sweep's headed
# by its trial, ``[lr=0.01-num_neg=3] epoch 2/5 ...``), the stages, and the
# thread that logs the epochs when the tracking server goes and comes back.
_OURS = re.compile(r"^(\[[^\]]*\] )?(epoch \d+/\d+|restarting after epoch)"
                   r"|^(building |reusing cached |MLflow's tracking server )")
# The first line of a Python traceback; its last is the first line after it
# that is not indented (the error).
_TRACEBACK = "Traceback (most recent call last):"
# Tracebacks Ray logs and goes on after: a get that timed out on a loaded
# machine (such as Train's controller's, stopping its placement-group cleaner).
_INTERNAL = re.compile(r"GetTimeoutError")
# Tune's driver-side notes that a step of its loop or a save of its state
# was slow (each step a loaded machine delays).
_SLOW_STEP_LOGGERS = ("ray.tune.utils.util", "ray.tune.execution.experiment_state")


def quiet_console(verbose: bool) -> None:
    """Lowers MLflow's and Ray's driver-side loggers to warnings (Tune's
    slow-step notes to errors), and filters the lines Ray forwards from its
    workers and actors (:class:`ForwardedLines`; those left out stay in
    Ray's log files), unless ``verbose``. Call it after ``ray.init``.
    Output that is not a terminal (a log file) gets Ray's forwarded lines
    without colour codes, verbose or not."""
    if not sys.stdout.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # read by Ray as it prints each line
    if verbose:
        return
    quiet_model_loading()
    for name in ("mlflow", "ray", "ray.data", "ray.train", "ray.tune", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in _SLOW_STEP_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    _filter_forwarded_lines(ForwardedLines())


def quiet_model_loading() -> None:
    """Keeps MLflow's artifact progress bars off the console."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def keep_line(line: str) -> bool:
    """Whether a line a Ray worker or actor printed reaches the console."""
    return bool(_OURS.search(line) or (_TROUBLE.search(line) and not _BENIGN.search(line)))


class ForwardedLines:
    """What of a batch of lines Ray forwards reaches the console: in each
    process's stream every Python traceback folds into the line that logged
    it and its error (:func:`fold_tracebacks`), then :func:`keep_line`
    picks. A traceback cut between two batches waits for its end."""

    def __init__(self) -> None:
        self.unfinished: dict[tuple[object, object], list[str]] = {}

    def __call__(self, data: dict) -> list[str]:
        stream = (data.get("pid"), data.get("is_err"))
        lines, unfinished = fold_tracebacks(
            [*self.unfinished.pop(stream, []), *data.get("lines", [])])
        if unfinished:
            self.unfinished[stream] = unfinished
        return [line for line in lines if keep_line(line)]


def fold_tracebacks(lines: list[str]) -> tuple[list[str], list[str]]:
    """``lines`` with each traceback and the line before it (what logged
    it) folded into that line and the error, or into nothing when Ray goes
    on after it (a timed-out get, or logged by a benign line); and the
    unfinished traceback at their end, with its line before."""
    kept: list[str] = []
    block: list[str] = []
    for line in lines:
        if block:
            block.append(line)
            if line[:1] not in ("", " ", "\t"):
                kept += _folded(block)
                block = []
        elif line.startswith(_TRACEBACK):
            block = [kept.pop() if kept else "", line]
        else:
            kept.append(line)
    return kept, block


def _folded(block: list[str]) -> list[str]:
    header, *_, error = block
    internal = _INTERNAL.search(error) or _BENIGN.search(header)
    return [] if internal else [header, error]


def _filter_forwarded_lines(pick: Callable[[dict], list[str]]) -> None:
    """Puts ``pick`` (a batch's lines to print) in front of the printer
    ``ray.init`` installed for forwarded lines (Ray 2.60's stream
    dispatcher; where Ray has none, or lays it out otherwise, lines pass
    unfiltered)."""
    from pipelines.runtime.ray_internals import forwarded_lines_dispatcher

    dispatcher = forwarded_lines_dispatcher()
    if dispatcher is None:
        return
    printers = [handler for name, handler in getattr(dispatcher, "handlers", [])
                if name == "ray_print_logs"]
    if len(printers) != 1:
        return

    def filtered(data: dict) -> None:
        lines = pick(data)
        if lines:
            printers[0]({**data, "lines": lines})

    dispatcher.remove_handler("ray_print_logs")
    dispatcher.add_handler("ray_print_logs", filtered)


def runs_table_page(experiment_id: str, main_metric: str,
                    parent_run_id: str | None = None) -> str:
    """The MLflow UI's page of an experiment's runs table, best first: ordered
    by ``final/valid_<main_metric>``, descending (runs without it last);
    with ``parent_run_id``, only the runs nested under it (a sweep's
    trials). MLflow 3 opens an experiment on its GenAI overview unless the
    UI's workflow is "model training", which ``workflowType`` sets; the
    route names the runs tab, as ``#/experiments/<id>`` redirects there
    without the query."""
    query = {"workflowType": "machine_learning"}
    if parent_run_id is not None:
        query["searchFilter"] = f"tags.`{PARENT_TAG}` = '{parent_run_id}'"
    query |= {"orderByKey": f"metrics.`{logged_name(f'final_valid_{main_metric}')}`",
              "orderByAsc": "false"}
    return f"#/experiments/{experiment_id}/runs?{urlencode(query, quote_via=quote)}"


def ui_link(page: str) -> tuple[str, str]:
    """How to open ``page`` of the MLflow UI: ``("at", its address)`` on the
    tracking server, or ``("with", the command)`` for ``mlflow ui`` on the
    local store."""
    from components.recording.reads import tracking_uri

    uri = without_credentials(tracking_uri())
    if uri.startswith("http"):
        return "at", f"{uri.rstrip('/')}/{page}"
    return "with", f"mlflow ui --backend-store-uri {uri}  then http://127.0.0.1:5000/{page}"


def print_summary(run_id: str, final: dict[str, float], main_metric: str) -> None:
    """The block a finished run ends with: its final metrics, the MLflow run,
    and the command that shows it."""
    from components.recording.metric_names import run_metrics
    from components.recording.model_export import logged_model_uri
    from components.recording.reads import get_run, tracking_uri
    from components.recording.seed_summary import spread_line

    uri = without_credentials(tracking_uri())
    run = get_run(run_id)
    metrics = run_metrics(run.data.metrics)
    best = metrics.get("best_epoch")
    lines = ["", f"run {run.info.run_name} finished"]
    spreads = [spread_line(final, split, main_metric) for split in ("test", "valid")]
    lines.extend(f"  {line}" for line in spreads if line is not None)
    if best is not None:
        lines.append(f"  best epoch     {int(best)} (by valid_{main_metric})")
    if "node_input_choice" in run.data.params:
        lines.append(f"  {run.data.params['node_input_choice']}")
    startup = describe_startup(metrics)
    if startup is not None:
        lines.append(f"  start          {startup}")
    lines.extend(final_lines(final))
    lines.append(f"  MLflow run     {run_id} in {uri}")
    if logged_model_uri(run_id) is not None:
        lines.append(f"  use the model  python pipelines/predict.py --model runs:/{run_id}/model "
                     "--top-k 20 --out top20.csv")
    ranked_by = main_metric if spreads[0] is None else f"{main_metric}_mean"  # the parent first
    how, target = ui_link(runs_table_page(run.info.experiment_id, ranked_by))
    lines.append(f"  {'see it ' + how:<15}{target}")
    print("\n".join(lines), flush=True)


FINAL_GROUPS = (("final", ""), ("HeaRT", "heart_"), ("filtered", "heart_filtered_"),
                ("ceiling", "heart_ceiling_"), ("ceiling", "heart_filtered_ceiling_"))
"""The summary's lines of final metrics: a label, and what follows
``final_<split>_`` in their keys: OGB's, HeaRT's (or its filtered
variant's), and beneath them the ceiling of the same negatives."""


def final_lines(final: dict[str, float]) -> list[str]:
    """One line per group of :data:`FINAL_GROUPS` and split, each key in the
    group of its longest matching prefix; a multi-seed run's as ``mean +-
    std``."""
    from components.recording.seed_summary import paired

    pairs = {key: f"{mean:.4f}" + ("" if std is None else f" +- {std:.4f}")
             for key, (mean, std) in paired(final).items()}
    lines = []
    for label, prefix in FINAL_GROUPS:
        for split in ("valid", "test"):
            start = f"final_{split}_{prefix}"
            shown = [f"{key.removeprefix(start)} {pairs[key]}"
                     for key in sorted(pairs, key=natural_order)
                     if _group(key.removeprefix(f"final_{split}_")) == prefix
                     and key.startswith(start)]
            if shown:
                lines.append(f"  {label + ' ' + split:<15}" + "  ".join(shown))
    return lines


def _group(metric: str) -> str:
    return max((prefix for _, prefix in FINAL_GROUPS if metric.startswith(prefix)), key=len)
