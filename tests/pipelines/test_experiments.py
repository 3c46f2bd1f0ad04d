"""Where a run's artifacts go: beside the tracking store, never under the
folder a command happened to start in (Ray deletes a job's folder)."""
from pathlib import Path

import mlflow
import pytest

from pipelines.runtime import job


@pytest.fixture
def store_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SQLite store in ``store/``, the command started in ``job-folder/``."""
    store = tmp_path / "store" / "mlflow.db"
    store.parent.mkdir()
    (tmp_path / "job-folder").mkdir()
    monkeypatch.chdir(tmp_path / "job-folder")
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    yield store
    while mlflow.active_run() is not None:
        mlflow.end_run()


def test_a_new_experiment_keeps_its_artifacts_beside_a_sqlite_store(store_elsewhere, tmp_path):
    job.use_experiment("plnlp-new")
    experiment = mlflow.get_experiment_by_name("plnlp-new")
    assert experiment.artifact_location == (store_elsewhere.parent / "mlartifacts").as_uri()
    with mlflow.start_run():
        mlflow.log_text("kept", "note.txt")
    assert [p.name for p in (store_elsewhere.parent / "mlartifacts").rglob("note.txt")] \
        == ["note.txt"]
    assert not any((tmp_path / "job-folder").iterdir())


def test_an_existing_experiment_keeps_the_location_it_was_made_with(store_elsewhere, tmp_path):
    mlflow.create_experiment("plnlp-old", artifact_location=(tmp_path / "old").as_uri())
    job.use_experiment("plnlp-old")
    assert mlflow.get_experiment_by_name("plnlp-old").artifact_location \
        == (tmp_path / "old").as_uri()
