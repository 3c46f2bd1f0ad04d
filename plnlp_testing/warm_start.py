"""What a command finds on a machine that ran the product before: an MLflow
SQLite store with its tables made, and the stage cache's load entry of a
dataset. A command under test that is not about either starts from them,
as a user's second run does: a new SQLite file costs MLflow's migrations
(about 4 s on 2 cores) and a new load entry a Ray worker that imports
torch, PyG and OGB (about 3 s), neither of which the test looks at.

Each is made once per process, by the product itself, and copied (never
linked: a test may damage its copy)."""
import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["cached_load", "empty_tracking_store"]


def _folder_of_this_process(prefix: str) -> Path:
    """A new temporary folder, removed when this process exits."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, True)
    return folder


@functools.cache
def _empty_tracking_database() -> Path:
    from mlflow import MlflowClient

    path = _folder_of_this_process("plnlp-tracking-") / "mlflow.db"
    working = Path.cwd()
    # from the store's folder: the default experiment's artifacts (``./mlruns``, resolved as
    # the migrations make it) land beside the store, not in the checkout the suite runs from
    os.chdir(path.parent)
    try:
        MlflowClient(f"sqlite:///{path}").search_experiments()  # the migrations make the tables
    finally:
        os.chdir(working)
    return path


def empty_tracking_store(path: Path) -> str:
    """An SQLite MLflow store at ``path`` with its tables made and nothing
    in them; its URI."""
    shutil.copyfile(_empty_tracking_database(), path)
    return f"sqlite:///{path}"


@functools.cache
def _load_entry(dataset: str, data_root: Path) -> Path:
    from components.load import load_dataset
    from components.storage.location import Location

    stages = _folder_of_this_process("plnlp-stages-")
    # the load task's own function, in this process: the entry a run's load stage builds
    artifact = load_dataset._function(dataset, Location(str(data_root)), Location(str(stages)))
    return artifact.directory.local_path()


def cached_load(cache_dir: Path, dataset: str, data_root: Path) -> None:
    """Puts the load stage's entry of OGB's ``dataset`` under ``data_root``
    into the stage cache of a command whose ``PLNLP_CACHE_DIR`` (or
    ``--work-dir``) is ``cache_dir``, so that its load stage reuses it."""
    entry = _load_entry(dataset, data_root.resolve())
    shutil.copytree(entry, cache_dir / "stages" / entry.name)
