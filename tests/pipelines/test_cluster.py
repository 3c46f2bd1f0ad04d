"""A real cluster on one machine: a Ray head without CPUs and two worker
nodes, an S3 server holding the work folder and the raw dataset, and an
MLflow server whose artifacts live in that S3 server. Jobs are submitted
as a user submits them (``ray job submit``, the store's keys and the
tracking server in the job's runtime environment); no node shares a folder
with another through the product."""
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.conftest import REPO_ROOT
from tests.object_store import bucket_keys, make_bucket, s3_env, s3_server, upload_folder
from tests.processes import free_port, process_group, wait_for_http

pytestmark = pytest.mark.slow

WORK = "s3://work/plnlp"
DATA = "s3://work/ogb"
TINY = ["--set", "embedding_dim=16", "--set", "hidden_channels=16", "--set",
        "predictor_hidden=16", "--set", "batch_size=256", "--set", "max_batches_per_epoch=2"]


@dataclass
class Services:
    cluster: object
    dashboard: str
    endpoint: str
    tracking_uri: str
    folder: Path


@pytest.fixture(scope="module")
def services(tmp_path_factory, ddi_root):
    """The S3 server (buckets ``work``, with the raw ogbl-ddi under ``ogb/``,
    and ``artifacts``), the MLflow server and the three-node Ray cluster."""
    from ray.cluster_utils import Cluster

    folder = tmp_path_factory.mktemp("cluster")
    with s3_server(folder) as endpoint, mlflow_server(folder, endpoint) as tracking_uri:
        make_bucket(endpoint, "work")
        upload_folder(endpoint, ddi_root / "ogbl_ddi", f"{DATA}/ogbl_ddi")
        port = free_port()
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": True, "dashboard_host": "127.0.0.1",
            "dashboard_port": port})
        try:
            for _ in range(2):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            dashboard = f"http://127.0.0.1:{port}"
            wait_for_http(f"{dashboard}/api/version", folder / "none", timeout=120,
                          any_status=True)
            yield Services(cluster, dashboard, endpoint, tracking_uri, folder)
        finally:
            cluster.shutdown()


def mlflow_server(folder: Path, endpoint: str):
    """``mlflow server`` with its runs in SQLite and its artifacts in the
    bucket ``artifacts``, proxied to its clients."""
    from contextlib import contextmanager

    @contextmanager
    def serve():
        make_bucket(endpoint, "artifacts")
        port = free_port()
        argv = ["mlflow", "server", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
                "--artifacts-destination", "s3://artifacts", "--host", "127.0.0.1",
                "--port", str(port), "--workers", "1"]
        with process_group(argv, {**os.environ, **s3_env(endpoint)}, folder,
                           folder / "mlflow.log"):
            url = f"http://127.0.0.1:{port}"
            wait_for_http(f"{url}/health", folder / "mlflow.log", timeout=180)
            yield url

    return serve()


def submit(services: Services, command: list[str], job_env: dict[str, str],
           wait: bool = True) -> subprocess.CompletedProcess:
    """``ray job submit`` of ``python <command>`` with ``job_env`` as the
    job's environment variables, as the README's "On a cluster" does, but
    with no ``--working-dir``: the nodes here share one machine and Ray's
    session folder, so each node's agent unpacking the same working folder
    would replace the one the driver runs in (on separate machines each
    node unpacks its own)."""
    runtime_env = json.dumps({"env_vars": {**s3_env(services.endpoint),
                                           "MLFLOW_TRACKING_URI": services.tracking_uri,
                                           **job_env}})
    token = (Path.home() / ".ray" / "auth_token").read_text().strip()
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token}
    argv = ["ray", "job", "submit", "--address", services.dashboard, "--runtime-env-json",
            runtime_env, *([] if wait else ["--no-wait"]), "--", "python", *command]
    for _ in range(30):  # the head's job agent takes a while to start after the dashboard
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        if "No available agent to submit job" not in done.stderr:
            return done
        time.sleep(2)
    return done


def runs_of(services: Services, experiment: str) -> list:
    client = MlflowClient(services.tracking_uri)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id]) if found else []


def test_a_submitted_job_keeps_its_work_in_the_bucket_and_its_artifacts_in_the_server(
        services, tmp_path):
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    done = submit(services, [str(REPO_ROOT / "pipelines" / "run.py"), "--dataset", "ddi",
                             "--preset", "smoke", *TINY, "--set", "epochs=2",
                             "--data-root", DATA, "--work-dir", WORK, "--experiment", "bucket"],
                  {"HOME": str(home), "PLNLP_CACHE_DIR": str(cache)})
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in output, output[-4000:]
    (run,) = runs_of(services, "bucket")
    assert run.info.status == "FINISHED"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")
    work = bucket_keys(services.endpoint, "work")
    assert any(key.startswith("plnlp/stages/load-") and key.endswith("/manifest.json")
               for key in work)
    artifacts = {key.rsplit("/", 1)[-1] for key in bucket_keys(services.endpoint, "artifacts")
                 if run.info.run_id in key or "/models/" in key}
    assert {"model.pt", "best.json", "metrics.csv", "learning_curve.png", "MLmodel",
            "scorer.pt"} <= artifacts
    assert sorted(home.rglob("*")) == [] and sorted(cache.rglob("*")) == []
