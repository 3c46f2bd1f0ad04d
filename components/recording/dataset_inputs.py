"""The splits a run trains and is scored on, as MLflow dataset inputs
(``mlflow.log_input``): one per split, its context ``training``,
``validation`` or ``test``, named after the dataset, its source the path or
URI of the data, its digest that of the split's files (see
:class:`components.storage.split_inputs.SplitInput`), its schema the pair
columns and its profile the counts of nodes, edges, negatives and pairs.
MLflow's run page lists them under "Datasets used"; a run's
``inputs.dataset_inputs`` reads them back."""
import json
import time
import warnings
from collections.abc import Sequence

import mlflow
from mlflow.data.code_dataset_source import CodeDatasetSource
from mlflow.data.dataset_source import DatasetSource
from mlflow.data.dataset_source_registry import resolve_dataset_source
from mlflow.data.meta_dataset import MetaDataset
from mlflow.exceptions import MlflowException
from mlflow.types import ColSpec, DataType, Schema

from components.storage.split_inputs import SplitInput

PAIR_SCHEMA = Schema([ColSpec(DataType.long, "src"), ColSpec(DataType.long, "dst")])
LOG_INPUT_ATTEMPTS = 3


class SplitDataset(MetaDataset):
    """A :class:`MetaDataset` (metadata, not the data) with a profile: the
    split's counts."""

    def __init__(self, split: SplitInput) -> None:
        self._profile = dict(split.counts)
        super().__init__(data_source(split.source), name=split.name, digest=split.digest,
                         schema=PAIR_SCHEMA)

    @property
    def profile(self) -> dict[str, int]:
        return self._profile

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "profile": json.dumps(self._profile)}


def log_dataset_inputs(splits: Sequence[SplitInput]) -> None:
    """Logs each of ``splits`` to the active run as a dataset input of its
    context (MLflow keeps one record per dataset and context: logging them
    again, as a resumed run does, adds none)."""
    for split in splits:
        _log_input(SplitDataset(split), split.context)


def _log_input(dataset: SplitDataset, context: str) -> None:
    """``mlflow.log_input``, tried again when it lost a race: the store makes
    a dataset's one record of an experiment when a run first logs it, and of
    two runs that log it at once (a sweep's trials) one breaks the
    record's unique key; tried again, it finds the record made."""
    for attempt in range(1, LOG_INPUT_ATTEMPTS + 1):
        try:
            mlflow.log_input(dataset, context=context)
            return
        except MlflowException as error:
            if attempt == LOG_INPUT_ATTEMPTS or not _lost_a_race(error):
                raise
            time.sleep(0.1 * attempt)


def _lost_a_race(error: MlflowException) -> bool:
    """Whether the store refused an insert for a row another run made meanwhile
    (SQLite's, PostgreSQL's and MySQL's words for it)."""
    said = str(error).lower()
    return any(words in said for words in ("unique constraint", "duplicate key",
                                           "duplicate entry"))


def data_source(uri: str) -> DatasetSource:
    """MLflow's source for ``uri``: a local path, ``s3://``, ``gs://``,
    ``http(s)://`` and the other schemes of its artifact stores, or else a
    source that only names it."""
    with warnings.catch_warnings():  # a local path resolves "in multiple ways", all local
        warnings.simplefilter("ignore")
        try:
            return resolve_dataset_source(uri)
        except MlflowException:
            return CodeDatasetSource({"uri": uri})
