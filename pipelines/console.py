"""What a run prints: the product's own lines, and Ray's and MLflow's only
when they warn or fail (everything with ``--verbose``)."""
import logging
import os
import re
import sys
from collections.abc import Callable

from components.startup import describe_startup

# Lines Ray's processes print that say something went wrong.
_TROUBLE = re.compile(r"Error|ERROR|Exception|Traceback|WARNING|Warning|Killed|OOM|died")
# Ray's own notices that look like trouble and are not: a deprecation inside
# Ray Data, and an internal note each Train controller prints at start.
_BENIGN = re.compile(r"RayDeprecationWarning|PreemptionWatcher|exclude_resources")
# The product's own lines, printed by the training worker.
_OURS = re.compile(r"^(epoch \d+/\d+|restarting after epoch|building |reusing cached )")


def quiet_console(verbose: bool) -> None:
    """Lowers MLflow's and Ray's driver-side loggers to warnings, and filters
    the lines Ray forwards from its workers and actors, unless ``verbose``.
    Call it after ``ray.init``. Output that is not a terminal (a log file)
    gets Ray's forwarded lines without colour codes, verbose or not."""
    if not sys.stdout.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # read by Ray as it prints each line
    if verbose:
        return
    quiet_model_loading()
    for name in ("mlflow", "ray", "ray.data", "ray.train", "ray.tune", "alembic"):
        logging.getLogger(name).setLevel(logging.WARNING)
    _filter_forwarded_lines(keep_line)


def quiet_model_loading() -> None:
    """Keeps MLflow's artifact progress bars off the console."""
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def keep_line(line: str) -> bool:
    """Whether a line a Ray worker or actor printed reaches the console."""
    return bool(_OURS.search(line) or (_TROUBLE.search(line) and not _BENIGN.search(line)))


def _filter_forwarded_lines(keep: Callable[[str], bool]) -> None:
    """Puts ``keep`` in front of the printer ``ray.init`` installed for
    forwarded lines (Ray 2.60's stream dispatcher; where Ray has none, or
    lays it out otherwise, lines pass unfiltered)."""
    try:
        from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher
    except ImportError:
        return
    printers = [handler for name, handler in getattr(dispatcher, "handlers", [])
                if name == "ray_print_logs"]
    if len(printers) != 1:
        return

    def filtered(data: dict) -> None:
        lines = [line for line in data.get("lines", []) if keep(line)]
        if lines:
            printers[0]({**data, "lines": lines})

    dispatcher.remove_handler("ray_print_logs")
    dispatcher.add_handler("ray_print_logs", filtered)


def runs_table_page(experiment_id: str) -> str:
    """The MLflow UI's page of an experiment's runs table. MLflow 3 opens an
    experiment on its GenAI overview unless the UI's workflow is "model
    training", which this query sets."""
    return f"#/experiments/{experiment_id}?workflowType=machine_learning"


def print_summary(run_id: str, final: dict[str, float], main_metric: str) -> None:
    """The block a finished run ends with: its final metrics, the MLflow run,
    and the command that shows it."""
    import mlflow

    from components.model_export import logged_model_uri

    uri = mlflow.get_tracking_uri()
    run = mlflow.get_run(run_id)
    best = run.data.metrics.get("best_epoch")
    lines = ["", f"run {run.info.run_name} finished"]
    if best is not None:
        lines.append(f"  best epoch     {int(best)} (by valid_{main_metric})")
    startup = describe_startup(run.data.metrics)
    if startup is not None:
        lines.append(f"  start          {startup}")
    for split in ("valid", "test"):
        shown = [f"{key.split(f'final_{split}_')[1]} {value:.4f}"
                 for key, value in sorted(final.items()) if key.startswith(f"final_{split}_")]
        lines.append(f"  final {split:5}    " + "  ".join(shown))
    lines.append(f"  MLflow run     {run_id} in {uri}")
    if logged_model_uri(run_id) is not None:
        lines.append(f"  use the model  python pipelines/predict.py --model runs:/{run_id}/model "
                     "--top-k 20 --out top20.csv")
    page = runs_table_page(run.info.experiment_id)
    if uri.startswith("http"):
        lines.append(f"  see it at      {uri.rstrip('/')}/{page}")
    else:
        lines.append(f"  see it with    mlflow ui --backend-store-uri {uri}  "
                     f"then http://127.0.0.1:5000/{page}")
    print("\n".join(lines), flush=True)
