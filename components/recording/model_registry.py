"""Registered link predictors: a run's ``model`` as a new version of a
name in MLflow's model registry, and the ``champion`` alias on the version
with the best validation metric so far, so that
``models:/<name>@champion`` always means the best model registered."""
import contextlib
import io

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from components.recording.metric_names import run_metrics
from components.recording.model_export import logged_model_uri
from components.recording.names import CHAMPION


def register_link_model(run_id: str, name: str, metric: str) -> str:
    """Registers run ``run_id``'s model as a new version of ``name``, tagged
    with the run's ``metric`` (e.g. ``final_valid_hits_20``); the version
    becomes ``champion`` when it beats the current one's (or there is
    none). Returns one line saying what happened."""
    client = MlflowClient()
    value = run_metrics(client.get_run(run_id).data.metrics)[metric]
    with contextlib.redirect_stderr(io.StringIO()):  # MLflow prints "Successfully registered"
        version = mlflow.register_model(logged_model_uri(run_id), name).version
    client.set_model_version_tag(name, version, metric, f"{value:.6g}")
    champion = _champion(client, name)
    line = f"registered {name} version {version} ({metric} {value:.4f})"
    held = None if champion is None else champion.tags.get(metric)
    if champion is None or held is None or value > float(held):
        client.set_registered_model_alias(name, CHAMPION, version)
        return f"{line}; it is models:/{name}@{CHAMPION}"
    return f"{line}; {CHAMPION} stays version {champion.version} ({metric} {float(held):.4f})"


def _champion(client: MlflowClient, name: str) -> object | None:
    try:
        return client.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:
        return None
