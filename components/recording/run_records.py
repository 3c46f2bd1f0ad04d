"""MLflow records of a pipeline run: settings, per-epoch table, learning
curve, checkpoint and final metrics."""
import contextlib
import os
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import asdict
from pathlib import Path

import mlflow
import pandas as pd
import yaml
from mlflow.tracking import MlflowClient

from components.artifacts import TrainArtifact
from components.recording.metric_names import logged_metrics, natural_order
from components.recording.plots import plot_learning_curve, plot_validation_curves
from components.recording.seed_summary import paired, spread_line
from components.recording.tags import (
    CONFIG_FILE,
    DATA_ROOT_TAG,
    DATASET_TAG,
    DESCRIPTION_TAG,
    FAILURE_TAG,
    INTERRUPTED_TAG,
    WORK_DIR_TAG,
)
from components.storage.location import local_copy
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.own_graph import GraphReport
from plnlp_core.parts.import_path import code_version, own_parts


def log_config(config: PLNLPConfig, extra: dict[str, object],
               exclude: Collection[str] = (), heuristic: bool = False) -> None:
    """The settings that shaped the run (a heuristic's graph, or the
    settings of the parts PLNLP used, see
    :meth:`~plnlp_core.config.PLNLPConfig.shaping_settings`) and ``extra``
    as params, with ``<kind>_version`` for each part of one's own (its
    package's version, or its files' hash: :func:`code_version`), and every
    resolved setting as ``config.yaml`` (what ``--resume`` reads); both
    without those in ``exclude`` (a sweep's searched ones, which each trial
    chooses)."""
    shaping = {key: value for key, value in config.shaping_settings(heuristic, exclude).items()
               if key not in exclude}
    versions = {} if heuristic else {f"{kind}_version": code_version(path)
                                     for kind, path in own_parts(config).items()
                                     if kind not in exclude}
    mlflow.log_params({key: "null" if value is None else value
                       for key, value in {**shaping, **versions, **extra}.items()})
    settings = {key: value for key, value in config.to_dict().items() if key not in exclude}
    mlflow.log_text(yaml.safe_dump(settings, sort_keys=False), CONFIG_FILE)


def log_sources(dataset: str, data_root: str, work_dir: str | None) -> None:
    """Tags the active run with where its inputs and outputs are, so that
    ``--resume RUN_ID`` finds them from any folder (under ``ray job submit``
    the job's own): the dataset as given (an OGB name, or the absolute path
    of a graph of one's own), the data root and, when one was given, the
    work folder, each an absolute path or a URI."""
    tags = {DATASET_TAG: dataset, DATA_ROOT_TAG: data_root}
    mlflow.set_tags({**tags, **({WORK_DIR_TAG: work_dir} if work_dir else {})})


def log_metrics(metrics: dict[str, float]) -> None:
    """Logs ``metrics`` to the active run, each under its name in MLflow
    (see :mod:`components.recording.metric_names`)."""
    mlflow.log_metrics(logged_metrics(metrics))


def describe_run(preset: str, changed: dict[str, object], final: dict[str, float],
                 main_metric: str) -> None:
    """Sets the active run's description (see :func:`run_description`)."""
    mlflow.set_tag(DESCRIPTION_TAG, run_description(preset, changed, final, main_metric))


def run_description(preset: str, changed: dict[str, object], final: dict[str, float],
                    main_metric: str) -> str:
    """What MLflow's run page shows first, in Markdown: the main metric of
    each split (for ``--runs``, its mean ± std over the seeds in percent),
    which the page shows before its "Show more"; the preset and the
    settings whose values differ from it; and a table of the ``final_*``
    metrics, one row per metric (mean ± std for ``--runs``) and a column
    per split."""
    settings = ", ".join(f"`{key}={value}`" for key, value in sorted(changed.items()))
    spreads = [line for split in ("test", "valid")
               if (line := spread_line(final, split, main_metric, "±")) is not None]
    main = [f"**{line}**" for line in spreads] or [
        f"{split} {main_metric} **{final[key]:.4f}**" for split in ("valid", "test")
        if (key := f"final_{split}_{main_metric}") in final]
    lines = [f"Final {', '.join(main)} (the best epoch by `valid_{main_metric}`).", "",
             f"Preset `{preset}`; " + (f"changed from it: {settings}." if settings
                                       else "its settings unchanged."), "",
             "| metric | valid | test |", "| --- | --- | --- |"]
    pairs = paired(final)
    names = sorted({key.removeprefix(f"final_{split}_") for key in pairs
                    for split in ("valid", "test") if key.startswith(f"final_{split}_")},
                   key=natural_order)
    for name in names:
        cells = [_cell(*pairs[key]) if (key := f"final_{split}_{name}") in pairs else ""
                 for split in ("valid", "test")]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _cell(value: float, std: float | None) -> str:
    return f"{value:.4f}" if std is None else f"{value:.4f} ± {std:.4f}"


def log_text(text: str, artifact_file: str) -> None:
    """Logs ``text`` as the active run's artifact ``artifact_file``."""
    mlflow.log_text(text, artifact_file)


def log_graph_report(name: str, report: GraphReport, node_ids_file: Path) -> None:
    """For the graph of one's own ``name``: says what reading it dropped or
    noticed (``report``), logs those counts as ``graph_*`` params and the
    node id mapping ``node_ids_file`` as ``graph/<its name>`` (the load
    stage's reader: :func:`components.load.log_graph`)."""
    print(f"graph {name}: {report}", flush=True)
    mlflow.log_params({f"graph_{key}": value for key, value in asdict(report).items()})
    mlflow.log_artifact(str(node_ids_file), "graph")


def log_training(trained: TrainArtifact, main_metric: str, title: str) -> None:
    """The best checkpoint, the per-epoch table and the learning curve."""
    with local_copy(trained.checkpoint_dir) as checkpoint:
        mlflow.log_artifacts(str(checkpoint), "checkpoint")
    table = pd.DataFrame(trained.history)
    with tempfile.TemporaryDirectory() as directory:
        table.to_csv(Path(directory) / "metrics.csv", index=False)
        plot_learning_curve(table, main_metric, trained.best_epoch, title,
                            Path(directory) / "learning_curve.png")
        mlflow.log_artifacts(directory)


def log_validation_curves(run_ids: dict[str, str], main_metric: str, title: str,
                          file_name: str) -> None:
    """Each nested run's validation curve (labelled by its key in
    ``run_ids``), read back from MLflow, as the picture ``file_name`` of the
    active (parent) run."""
    client = MlflowClient()
    curves = {}
    for label, run_id in run_ids.items():
        history = client.get_metric_history(run_id, f"valid_{main_metric}")
        curves[label] = pd.Series({m.step: m.value for m in history}).sort_index()
    with tempfile.TemporaryDirectory() as directory:
        plot_validation_curves(curves, main_metric, title, Path(directory) / file_name)
        mlflow.log_artifacts(directory)


def clear_failure() -> None:
    """Removes what a failure or an interrupt tagged the active run with,
    once the run has gone on (``--resume``) to finish."""
    run = mlflow.active_run()
    tags = mlflow.get_run(run.info.run_id).data.tags
    for tag in (FAILURE_TAG, INTERRUPTED_TAG):
        if tag in tags:
            mlflow.delete_tag(tag)


def mark_failed(reason: str, tracking_away: bool = False) -> None:
    """Ends every active run as FAILED, with the reason as a tag; raises the
    first error of a store that did not take it. Every run is let go either
    way, so that the process's exit does not try again (MLflow ends the
    runs still active at exit, with its client's retries: minutes against a
    server that does not answer). With ``tracking_away`` (the run failed
    because the tracking server stayed away past its patience) each request
    is tried once, not with those retries."""
    errors = []
    with _tried_once(tracking_away):
        while mlflow.active_run() is not None:
            for end in (lambda: mlflow.set_tag(FAILURE_TAG, reason[:5000]),
                        lambda: mlflow.end_run(status="FAILED")):  # which lets go of the run
                try:
                    end()
                except Exception as error:  # the store away: the next command marks the run
                    errors.append(error)
    if errors:
        raise errors[0]


@contextlib.contextmanager
def _tried_once(once: bool) -> Iterator[None]:
    """Within the block, with ``once``, MLflow's client sends each request
    once (``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``, read at every request)."""
    if not once:
        yield
        return
    before = os.environ.get(CLIENT_RETRIES)
    os.environ[CLIENT_RETRIES] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[CLIENT_RETRIES]
        else:
            os.environ[CLIENT_RETRIES] = before


CLIENT_RETRIES = "MLFLOW_HTTP_REQUEST_MAX_RETRIES"
