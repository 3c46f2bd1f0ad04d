"""What the commands read back from MLflow, each read written once: where
the tracking store is, the active run, a run by its id (refused in one
sentence when the store has none), a run's nested runs, its settings
(``config.yaml``) and other artifacts, its metric history, and the models
logged and registered. Nothing outside the recording wing imports MLflow:
it reads through here (and checks the store through
:mod:`components.recording.tracking_store`)."""
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow
import yaml
from mlflow.entities import Metric, Run, RunInfo
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from components.recording.mlflow_internals import thread_run_id
from components.recording.tags import CONFIG_FILE, PARENT_TAG
from plnlp_core.errors import PLNLPError

ELSEWHERE = "or set MLFLOW_TRACKING_URI to the store that holds it"


def tracking_uri() -> str:
    """The tracking store MLflow reads and writes (``MLFLOW_TRACKING_URI``,
    else its local default)."""
    return mlflow.get_tracking_uri()


def active_run_info() -> RunInfo | None:
    """The innermost active run's info (its id, name, experiment), or ``None``."""
    run = mlflow.active_run()
    return None if run is None else run.info


def main_thread_run_id() -> str | None:
    """The main thread's innermost active run's id, read from any thread (a
    signal's watcher): MLflow keeps each thread's active runs apart, and
    :func:`active_run_info` sees only the caller's."""
    if threading.current_thread() is threading.main_thread():
        run = mlflow.active_run()
        return run and run.info.run_id
    return thread_run_id(threading.main_thread())


def get_run(run_id: str) -> Run:
    """The run ``run_id``, its params, metrics and tags as they are now."""
    return MlflowClient().get_run(run_id)


def find_run(run_id: str, fix: str) -> Run:
    """The run ``run_id``, or the one refusal for an id the tracking store
    does not have: it names the id and the store, then ``fix`` (how to find
    the right id), or the store that holds it."""
    try:
        return get_run(run_id)
    except MlflowException as error:
        raise PLNLPError(f"there is no MLflow run {run_id} at {tracking_uri()}; {fix}, "
                         f"{ELSEWHERE}.") from error


def child_runs(parent_run_id: str, experiment_id: str | None = None) -> list[Run]:
    """The runs nested under ``parent_run_id`` (a run's seeds, a sweep's
    trials), in its experiment (looked up unless given)."""
    client = MlflowClient()
    if experiment_id is None:
        experiment_id = client.get_run(parent_run_id).info.experiment_id
    return client.search_runs([experiment_id],
                              filter_string=f"tags.`{PARENT_TAG}` = '{parent_run_id}'")


def run_names(experiment_id: str, prefix: str) -> set[str]:
    """The names of the experiment's runs that start with ``prefix``."""
    quoted = prefix.replace("'", "\\'")
    return {run.info.run_name for run in MlflowClient().search_runs(
        [experiment_id], filter_string=f"attributes.run_name LIKE '{quoted}%'")}


def experiment_name(experiment_id: str) -> str:
    """The name of the experiment ``experiment_id``."""
    return MlflowClient().get_experiment(experiment_id).name


def metric_history(run_id: str, name: str) -> list[Metric]:
    """Every value the run logged of metric ``name`` (its MLflow name), with
    its step and timestamp."""
    return MlflowClient().get_metric_history(run_id, name)


@contextmanager
def downloaded(run_id: str, artifact: str) -> Iterator[Path]:
    """The run's artifact ``artifact``, downloaded for the block."""
    with tempfile.TemporaryDirectory() as folder:
        yield Path(MlflowClient().download_artifacts(run_id, artifact, folder))


def run_settings(run_id: str) -> dict:
    """Every resolved setting the run started with: its ``config.yaml``
    (see :func:`components.recording.run_records.log_config`)."""
    with downloaded(run_id, CONFIG_FILE) as path:
        return yaml.safe_load(path.read_text())


def has_logged_model(model_id: str) -> bool:
    """Whether the store holds the logged model ``model_id`` (``m-...``)."""
    try:
        MlflowClient().get_logged_model(model_id)
    except MlflowException:
        return False
    return True


def registered_model(name: str) -> object | None:
    """The registered model ``name`` (its aliases), or ``None``."""
    try:
        return MlflowClient().get_registered_model(name)
    except MlflowException:
        return None


def registered_model_names() -> list[str]:
    """The names of the registered models, sorted."""
    return sorted(model.name for model in MlflowClient().search_registered_models())


def model_versions(name: str) -> list[int]:
    """The versions of the registered model ``name``, sorted."""
    return sorted(int(v.version) for v in MlflowClient().search_model_versions(f"name = '{name}'"))


def load_python_model(uri: str) -> object:
    """The Python object behind the ``pyfunc`` model ``uri`` names
    (:class:`components.recording.served_model.LinkPredictorModel`), loaded."""
    return mlflow.pyfunc.load_model(uri).unwrap_python_model()
