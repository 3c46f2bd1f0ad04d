"""Fixtures shared by the suite: one local Ray for every test that needs
it, a throwaway MLflow store per test, and the datasets; under
``pytest -n 2``, tests marked ``alone`` run with no other beside them
(:mod:`plnlp_testing.alone`) and the longest files start first
(:mod:`plnlp_testing.longest_first`); what collecting the tests made is
kept out of garbage collections (:mod:`plnlp_testing.frozen_collection`)."""
import os
from pathlib import Path
from types import ModuleType

import pytest

from plnlp_testing.warm_start import empty_tracking_store
from tests.standin import write_ddi_standin

REPO_ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = ["plnlp_testing.alone", "plnlp_testing.longest_first",
                  "plnlp_testing.frozen_collection"]


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Caches and scratch folders of the whole run go to a temporary folder."""
    path = tmp_path_factory.mktemp("plnlp-cache")
    os.environ["PLNLP_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(autouse=True)
def seeded_torch() -> None:
    """Each test starts from torch's generator seeded 0, so that its random
    inputs are the same whichever tests ran before it in its worker: with
    ``-n 2`` that varies from run to run, and a tolerance that one draw
    passes and another fails became a failure CI could not repeat (a
    gradient 5 % past fp32's fixed tolerance, tests/core/test_common_neighbors.py)."""
    import torch  # here, not at the top: plnlp_testing.shared_cores sets OpenMP's waits first

    torch.manual_seed(0)


@pytest.fixture(scope="session")
def ray_session(cache_dir: Path):
    """One local Ray for the whole suite (:func:`start_suite_ray`):
    starting one takes many seconds."""
    ray = start_suite_ray()
    yield ray
    ray.shutdown()


@pytest.fixture
def suite_ray_address(ray_session: ModuleType) -> str:
    """The GCS address of the suite's Ray, for a command under test to join
    (``plnlp_testing.processes.pipeline_env``'s ``ray_address``) when the
    test is not about a Ray of the command's own; read for each test, since
    test_cluster starts the suite's Ray again."""
    return ray_session.get_runtime_context().gcs_address


def start_suite_ray() -> ModuleType:
    """Starts the suite's local Ray and returns the ``ray`` module. Its own
    (``address="local"``), never another Ray running on the machine.
    Started from the repository's root, which Ray puts on its workers' path
    (the folder its driver runs in), so that they import ``examples/`` as a
    user's workers import the package in the folder a command runs from.

    Its workers start as a command's own local Ray's do
    (:data:`~pipelines.runtime.ray_cluster.LOCAL_RAY_CONFIG`: full garbage
    collections rarer). Idle workers past the count of its CPUs live a
    minute, not Ray's second.
    Its tests run stage after stage beside actors that hold workers of their
    own, so with Ray's second each stage's task found the worker of the one
    before ended and started another, which imported torch and PyG again (about
    4.5 CPU-s). Measured (AMD EPYC, 2 vCPUs), the 31 tests of test_run,
    test_predict and test_stages in one process: 26 workers and 166 CPU-s with
    Ray's second, 121 CPU-s with a minute. Keeping more idle workers for good
    (8, not 2) did no better there (125 CPU-s), and an idle worker costs about
    0.45 CPU-s a minute.
    """
    import ray

    from pipelines.runtime.ray_cluster import LOCAL_RAY_CONFIG

    started_in = os.getcwd()
    os.chdir(REPO_ROOT)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=True,
                 _system_config={**LOCAL_RAY_CONFIG,
                                 "idle_worker_killing_time_threshold_ms": 60_000})
    finally:
        os.chdir(started_in)
    return ray


def use_tracking_store(uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """MLflow at ``uri`` for one test, run from ``tmp_path`` (where a local
    store keeps its artifacts), with no experiment active yet (an earlier
    test's would be missing from it); runs the test left open are ended
    after it."""
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()


@pytest.fixture
def mlflow_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite MLflow store (a copy of an empty one: see
    :func:`plnlp_testing.warm_start.empty_tracking_store`), with artifacts beside it."""
    yield from use_tracking_store(empty_tracking_store(tmp_path / "mlflow.db"), tmp_path,
                                  monkeypatch)


@pytest.fixture
def unwritten_mlflow_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An SQLite MLflow store whose file does not exist yet, for tests that
    check nothing was recorded (no file made) or that a run makes one."""
    yield from use_tracking_store(f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path, monkeypatch)


@pytest.fixture
def standin_root(tmp_path: Path) -> Path:
    """A small random ogbl-ddi in OGB's exact layout."""
    return write_ddi_standin(tmp_path / "datasets")


@pytest.fixture(scope="session")
def ddi_standin_split(tmp_path_factory: pytest.TempPathFactory):
    """The stand-in ddi (60 nodes, 320 train edges), loaded by ``load_ogb``."""
    from plnlp_core.data.datasets import DATASETS
    from plnlp_core.data.ogb_reader import load_ogb

    root = write_ddi_standin(tmp_path_factory.mktemp("ddi-root"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PLNLP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return load_ogb(DATASETS.get("ddi"), Path(root))


@pytest.fixture(scope="session")
def ddi_root() -> Path:
    """The real ogbl-ddi: ``$PLNLP_DATA_ROOT`` (relative to the repo root),
    else ``../shared/datasets``."""
    root = Path(os.environ.get("PLNLP_DATA_ROOT") or REPO_ROOT.parent / "shared" / "datasets")
    root = root if root.is_absolute() else REPO_ROOT / root
    assert (root / "ogbl_ddi" / "split" / "target" / "train.pt").exists(), (
        f"the real ogbl-ddi is not under {root}; set PLNLP_DATA_ROOT to the folder holding "
        "ogbl_ddi"
    )
    return root
