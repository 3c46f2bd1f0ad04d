"""Stage ``export``: the best model as an MLflow ``pyfunc`` model of the
active run, ``model``, that scores pairs of the user's node ids (see
:mod:`components.recording.served_model`). Whoever evaluated the best model last
encoded the nodes once (:class:`plnlp_core.scoring.link_scorer.LinkScorer`; see
:mod:`components.final_export`): the training worker in the main job, or
the Ray task here that evaluates a checkpoint on its own (the kubeflow
pipeline's evaluate step). The driver logs the files with the model's own
copy of :mod:`plnlp_core`."""
import warnings
from importlib.metadata import version
from pathlib import Path

import mlflow
import ray
from mlflow.models import ModelSignature
from mlflow.types import ColSpec, Schema
from mlflow.types.schema import AnyType

import components.recording.served_model
import plnlp_core
from components.artifacts import DatasetArtifact, HeartArtifact, TrainArtifact
from components.evaluate import load_trained
from components.final_export import finish
from components.heart import read_heart_negatives
from components.scheduling import ANYWHERE
from components.storage.parquet_io import read_node_ids
from components.storage.stage_cache import local_entry
from plnlp_core.config import PLNLPConfig

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


@ray.remote(num_cpus=1, scheduling_strategy=ANYWHERE)
def evaluate_and_export(
    dataset: DatasetArtifact, trained: TrainArtifact, config: PLNLPConfig, directory: str,
    heart: HeartArtifact | None = None,
) -> None:
    """The best checkpoint's ``final_*`` metrics (the evaluate stage) and
    its :class:`LinkScorer`, from one reading of the split and the
    checkpoint, written into ``directory`` (storage the driver sees) by
    :func:`components.final_export.finish`; with ``heart``, HeaRT's metrics
    too."""
    split, model, adj = load_trained(dataset, trained, config)
    node_ids = read_node_ids(local_entry(dataset.directory), dataset.meta.num_nodes)
    finish(model, split, adj, config, node_ids, directory,
           heart_negatives=None if heart is None else read_heart_negatives(heart))


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
    :func:`served_signature`."""
    with warnings.catch_warnings():  # on a missing input example: the signature says it all
        warnings.filterwarnings("ignore", message=".*input example was not provided")
        mlflow.pyfunc.log_model(
            name=MODEL_ARTIFACT, python_model=components.recording.served_model.__file__,
            artifacts={components.recording.served_model.SCORER_ARTIFACT: str(directory)},
            signature=served_signature(id_kind), code_paths=[str(Path(plnlp_core.__file__).parent)],
            pip_requirements=[f"{name}=={version(name).split('+')[0]}" for name in REQUIREMENTS],
        )
