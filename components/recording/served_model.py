"""A trained link predictor as an MLflow ``pyfunc`` model: MLflow's models
from code, so this file is logged with each model and run when one is
loaded (``mlflow.pyfunc.load_model``, ``mlflow models serve``), with the
model's own copy of :mod:`plnlp_core`. It scores pairs of the user's node
ids: a frame with ``src`` and ``dst`` in, one ``score`` column out, as
:class:`plnlp_core.scoring.link_scorer.LinkScorer` computes it (on the GPU when
there is one). The ids arrive as the request sent them (see
:data:`components.recording.model_export.ID_COLUMN_TYPES`) and are refused as
``pipelines/predict.py`` refuses them, in the same sentence."""
from pathlib import Path

import mlflow
import pandas as pd
import torch
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.link_scorer import LinkScorer

SCORER_ARTIFACT = "scorer"


class LinkPredictorModel(mlflow.pyfunc.PythonModel):
    """Scores ``(src, dst)`` pairs with the run's :class:`LinkScorer`."""

    def load_context(self, context: mlflow.pyfunc.PythonModelContext) -> None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.scorer = LinkScorer.load(Path(context.artifacts[SCORER_ARTIFACT]), device)

    def predict(self, context: mlflow.pyfunc.PythonModelContext, model_input: pd.DataFrame,
                params: dict | None = None) -> pd.DataFrame:
        try:
            pairs = self.scorer.pairs_of(model_input["src"], model_input["dst"])
        except PLNLPError as error:  # the scoring server answers 400 with the sentence
            raise MlflowException(str(error), INVALID_PARAMETER_VALUE) from None
        return pd.DataFrame({"score": self.scorer.score(pairs).double().numpy()})


mlflow.models.set_model(LinkPredictorModel())
