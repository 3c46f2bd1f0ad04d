"""MLflow's side of the export: the best model as an MLflow ``pyfunc``
model of the active run, ``model``, that scores pairs of the user's node ids
(see :mod:`components.recording.served_model`). Whoever evaluated the best
model last encoded the nodes once
(:class:`plnlp_core.scoring.link_scorer.LinkScorer`) and wrote its files (the
evaluate stage, :mod:`components.evaluate`); the driver logs them here with
the model's own copy of :mod:`plnlp_core` and the code of the parts of one's
own its config names (their package's folder, or their module), so that it
loads where neither is installed. Nothing here reads a stage's output: the
caller hands over the scorer's folder.

Registered link predictors: a run's ``model`` as a new version of a
name in MLflow's model registry, and the ``champion`` alias on the version
with the best validation metric so far, so that
``models:/<name>@champion`` always means the best model registered."""
import contextlib
import io
import warnings
from importlib.metadata import version
from pathlib import Path

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.models import ModelSignature
from mlflow.tracking import MlflowClient
from mlflow.types import ColSpec, Schema
from mlflow.types.schema import AnyType

import components.recording.served_model
import plnlp_core
from components.recording.metric_names import run_metrics
from components.recording.tags import CHAMPION
from plnlp_core.parts.import_path import code_location, own_parts
from plnlp_core.scoring.link_scorer import LinkScorer

MODEL_ARTIFACT = "model"
REQUIREMENTS = ("torch", "torch-geometric", "ogb", "pyarrow", "pandas", "scipy")
"""What loading the model imports besides MLflow, pinned to this machine's versions."""
ID_COLUMN_TYPES = {"long": AnyType(), "string": "string"}
"""The signature's type of ``src`` and ``dst`` for each kind of node ids: types
MLflow passes on as sent, so that :class:`plnlp_core.data.node_ids.NodeIds` checks
every id as ``pipelines/predict.py`` does. A ``long`` column would not do:
``mlflow models serve`` casts a JSON request's column to it with
``astype`` (``cast_df_types_according_to_schema``), which truncates 1.5 to 1.
The price: MLflow reads no ``text/csv`` request against an ``any`` column
(JSON and Parquet requests are read as sent)."""


def logged_model_uri(run_id: str) -> str | None:
    """``models:/<model id>`` of the model run ``run_id`` logged, if any."""
    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    models = client.search_logged_models(
        experiment_ids=[run.info.experiment_id],
        filter_string=f"source_run_id = '{run_id}' AND name = '{MODEL_ARTIFACT}'")
    return f"models:/{models[0].model_id}" if models else None


def served_signature(id_kind: str) -> ModelSignature:
    """The model's signature: pairs ``src``, ``dst`` (ids of kind
    ``id_kind``, typed as :data:`ID_COLUMN_TYPES` says) in, ``score`` out.
    ``mlflow.models.set_signature("models:/<model id>", served_signature("long"))``
    gives it to a model logged with ``long`` columns."""
    id_type = ID_COLUMN_TYPES[id_kind]
    return ModelSignature(inputs=Schema([ColSpec(id_type, "src"), ColSpec(id_type, "dst")]),
                          outputs=Schema([ColSpec("double", "score")]))


def log_link_model(directory: Path, id_kind: str) -> None:
    """Logs the scorer in ``directory`` as the active run's ``model``, with
    :func:`served_signature` and the code it loads (:func:`model_code`)."""
    with warnings.catch_warnings():  # on a missing input example: the signature says it all
        warnings.filterwarnings("ignore", message=".*input example was not provided")
        mlflow.pyfunc.log_model(
            name=MODEL_ARTIFACT, python_model=components.recording.served_model.__file__,
            artifacts={components.recording.served_model.SCORER_ARTIFACT: str(directory)},
            signature=served_signature(id_kind), code_paths=model_code(directory),
            pip_requirements=[f"{name}=={version(name).split('+')[0]}" for name in REQUIREMENTS],
        )


def model_code(directory: Path) -> list[str]:
    """The code the scorer in ``directory`` loads: :mod:`plnlp_core`, and the
    folder or module file of each part of one's own its config names."""
    parts = own_parts(LinkScorer.saved_config(directory)).values()
    return list(dict.fromkeys([str(Path(plnlp_core.__file__).parent),
                               *(str(code_location(path)) for path in parts)]))


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
