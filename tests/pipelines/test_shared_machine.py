"""A machine other people's Ray runs on too: a run without ``RAY_ADDRESS``
starts a Ray of its own instead of joining theirs, without Ray's "multiple
active Ray instances" traceback, and a job submitted to a second head on
free ports keeps its MLflow artifacts beside the tracking store, not in
Ray's job folder."""
import json
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest

from tests.conftest import REPO_ROOT
from tests.processes import free_port, pipeline_env, process_group, wait_for_http

pytestmark = pytest.mark.slow

TINY = ["--preset", "smoke", "--set", "embedding_dim=16", "--set", "hidden_channels=16",
        "--set", "predictor_hidden=16", "--set", "batch_size=64", "--set", "epochs=2"]
HEAD_PORTS = ("--port", "--dashboard-port", "--ray-client-server-port",
              "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
              "--metrics-export-port", "--runtime-env-agent-port", "--node-manager-port",
              "--object-manager-port")


@pytest.fixture(scope="module")
def other_head(tmp_path_factory):
    """Another user's ``ray start --head`` with one CPU, every port free
    (as docs/cluster.md's shared-machine steps start one); its dashboard URL."""
    folder = tmp_path_factory.mktemp("other-head")
    ports = {flag: free_port() for flag in HEAD_PORTS}
    argv = ["ray", "start", "--head", "--block", "--num-cpus", "1", "--disable-usage-stats",
            "--include-dashboard", "true", "--dashboard-host", "127.0.0.1",
            *[part for flag, port in ports.items() for part in (flag, str(port))]]
    with process_group(argv, pipeline_env(folder), folder, folder / "head.log"):
        dashboard = f"http://127.0.0.1:{ports['--dashboard-port']}"
        wait_for_http(f"{dashboard}/api/version", folder / "head.log", timeout=120,
                      any_status=True)  # 401 without the token
        yield dashboard


def test_a_run_without_ray_address_starts_its_own_ray_beside_anothers(
        other_head, standin_root, tmp_path):
    env = pipeline_env(tmp_path, MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}")
    # two CPUs a worker: the other head's one CPU could not hold it, a Ray of its own does
    done = subprocess.run([sys.executable, "pipelines/run.py", "--dataset", "ddi",
                           "--data-root", str(standin_root), *TINY, "--cpus-per-worker", "2"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "multiple active Ray instances" not in output and "Traceback" not in output


def test_a_submitted_job_keeps_its_artifacts_beside_the_tracking_store(
        other_head, standin_root, tmp_path):
    store = tmp_path / "store" / "mlflow.db"
    store.parent.mkdir()
    job_folder = tmp_path / "job"
    job_folder.mkdir()
    env = pipeline_env(tmp_path, RAY_AUTH_MODE="token",
                       RAY_AUTH_TOKEN=(Path.home() / ".ray" / "auth_token").read_text().strip())
    runtime_env = json.dumps({"env_vars": {"MLFLOW_TRACKING_URI": f"sqlite:///{store}",
                                           "PLNLP_CACHE_DIR": str(tmp_path / "cache")}})
    done = subprocess.run(
        ["ray", "job", "submit", "--address", other_head, "--working-dir", str(job_folder),
         "--runtime-env-json", runtime_env, "--", "python",
         str(REPO_ROOT / "pipelines" / "run.py"), "--dataset", "ddi", "--data-root",
         str(standin_root), "--experiment", "submitted", *TINY],
        env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in output, output[-3000:]
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    experiment = mlflow.get_experiment_by_name("submitted")
    assert experiment.artifact_location == (store.parent / "mlartifacts").as_uri()
    (run,) = mlflow.search_runs([experiment.experiment_id], output_format="list")
    kept = {path.name for path in (store.parent / "mlartifacts").rglob("*") if path.is_file()}
    assert {"metrics.csv", "learning_curve.png", "config.yaml", "MLmodel"} <= kept
    assert run.info.artifact_uri.startswith((store.parent / "mlartifacts").as_uri())
