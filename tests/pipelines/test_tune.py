"""Sweeps through Ray Tune on the ddi stand-in, recorded on a real MLflow
tracking server: ASHA stops trials early, Optuna searches, and the whole
sweep runs as a Ray job on a token-authenticated head."""
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from plnlp_testing.processes import (
    free_port,
    jobs_answer,
    pipeline_env,
    process_group,
    submit_job,
)
from plnlp_testing.tracking_server import TrackingServer
from plnlp_testing.warm_start import cached_load
from tests.conftest import use_tracking_store
from tests.standin import write_ddi_standin

REPO_ROOT = Path(__file__).resolve().parents[2]
TINY = ["--set", "embedding_dim=8", "--set", "hidden_channels=8", "--set", "predictor_hidden=8",
        "--set", "batch_size=64", "--set", "eval_every=1"]
ASHA_SPACE = """
preset: smoke
metric: valid_hits_20
search: grid
max_concurrent: 2
scheduler:
  asha: {grace_period: 1, reduction_factor: 2, max_t: 4}
space:
  lr: {choice: [0.00001, 0.05]}
  num_neg: {choice: [1, 3]}
"""
OPTUNA_SPACE = """
preset: smoke
search: optuna
num_samples: 2
max_concurrent: 1
space:
  lr: {loguniform: [0.001, 0.05]}
  loss: {choice: [auc, ce]}
"""


@pytest.fixture(scope="module")
def tracking_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mlflow server`` on a SQLite store and a free port, as a team runs one."""
    with TrackingServer(tmp_path_factory.mktemp("tune") / "mlflow-server") as server:
        server.start()
        yield server.uri


@pytest.fixture
def server_store(tracking_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The tracking server as the process's MLflow store."""
    yield from use_tracking_store(tracking_server, tmp_path, monkeypatch)


def train_controllers() -> int:
    """How many Ray Train controllers this Ray has started, ended ones included."""
    import ray

    return sum(actor.get("ActorClassName") == "TrainController"
               for actor in ray._private.state.actors().values())  # GCS's table: no dashboard


def write_space(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text)
    return path


def sweep_runs(uri: str, experiment: str) -> tuple[object, list]:
    """The sweep's parent run and its children."""
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    return parents[0], children


@pytest.mark.slow
def test_asha_stops_weak_trials_and_mlflow_records_the_sweep(
    ray_session, server_store, standin_root, tmp_path, capsys,
):
    from pipelines.tune import main

    space = write_space(tmp_path, ASHA_SPACE)
    argv = ["--dataset", "ddi", "--space", str(space), "--data-root", str(standin_root),
            "--experiment", "asha", *TINY, "--set", "epochs=4", "--set", "checkpoint_every=4"]
    controllers = train_controllers()
    assert main(argv) == 0
    assert train_controllers() == controllers  # trials of one worker train in their own actor
    out = capsys.readouterr().out
    assert "+----" not in out and "Configuration for experiment" not in out  # no Tune table
    trial_lines = [line for line in out.splitlines() if line.startswith("trial lr=")]
    assert len(trial_lines) == 4 and all("valid_hits_20 0." in line for line in trial_lines)
    client = MlflowClient(server_store)
    parent, children = sweep_runs(server_store, "asha")
    assert parent.info.status == "FINISHED" and len(children) == 4
    assert sorted((float(c.data.params["lr"]), int(c.data.params["num_neg"])) for c in children) \
        == [(0.00001, 1), (0.00001, 3), (0.05, 1), (0.05, 3)]
    assert all(set(c.data.params) == set(children[0].data.params) for c in children)
    assert {c.info.run_name for c in children} == {
        f"lr={lr:.4g}-num_neg={num_neg}" for lr in (0.00001, 0.05) for num_neg in (1, 3)}
    best_by_child = {}
    for child in children:
        assert child.info.status == "FINISHED", child.data.tags.get("failure_reason")
        history = client.get_metric_history(child.info.run_id, "valid_hits_20")
        epochs = sorted(m.step for m in history)
        stopped = child.data.tags.get("stopped_early")
        last = int(stopped) if stopped else 4
        assert epochs == list(range(1, last + 1))  # every evaluated epoch, each once
        assert ("final/test_hits_20" in child.data.metrics) == (stopped is None)
        best_by_child[child.info.run_id] = max(m.value for m in history)
    splits = [{next(tag.value for tag in item.tags if tag.key == "mlflow.data.context"):
               (item.dataset.name, item.dataset.digest)
               for item in client.get_run(child.info.run_id).inputs.dataset_inputs}
              for child in children]  # each trial records the splits it trained on: the same
    assert sorted(splits[0]) == ["test", "training", "validation"]
    assert all(trial == splits[0] for trial in splits)
    assert {name for name, _ in splits[0].values()} == {"ogbl-ddi"}
    assert any("stopped_early" in c.data.tags for c in children)
    best = max(best_by_child.values())
    assert parent.data.metrics["best/valid_hits_20"] == pytest.approx(best)
    assert best_by_child[parent.data.tags["best_trial_run_id"]] == pytest.approx(best)
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"trials.csv", "valid_by_setting.png", "valid_by_epoch.png",
            "search_space.yaml"} <= artifacts
    table = pd.read_csv(client.download_artifacts(parent.info.run_id, "trials.csv", tmp_path))
    assert sorted(table["run_id"]) == sorted(best_by_child)
    assert set(table["status"]) <= {"completed", "stopped_early"}
    assert parent.data.params["search"] == "grid" and parent.data.params["scheduler"] == "asha"


@pytest.mark.slow
def test_optuna_searches_the_space_and_scores_trials_on_heart_negatives_built_once(
    ray_session, server_store, standin_root, tmp_path, capsys,
):
    from pipelines.tune import main

    space = write_space(tmp_path, OPTUNA_SPACE)
    argv = ["--dataset", "ddi", "--space", str(space), "--data-root", str(standin_root),
            "--experiment", "optuna", *TINY, "--set", "epochs=1", "--set", "heart_negatives=14"]
    assert main(argv) == 0
    assert capsys.readouterr().out.count("building heart output") == 1  # before the trials
    parent, children = sweep_runs(server_store, "optuna")
    assert parent.data.params["search"] == "optuna" and len(children) == 2
    assert all(c.info.status == "FINISHED" for c in children)
    assert all(0.0 < c.data.metrics["final/test_heart_mrr"] <= 1.0 for c in children)
    lrs = [float(c.data.params["lr"]) for c in children]
    assert all(0.001 <= lr <= 0.05 for lr in lrs) and lrs[0] != lrs[1]


def ship_parts(folder: Path) -> Path:
    """``folder`` holding a copy of ``examples/link_parts`` as the package
    ``lab_parts``, found nowhere else: a user's project to submit."""
    shutil.copytree(REPO_ROOT / "examples" / "link_parts", folder / "lab_parts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for module in (folder / "lab_parts").glob("*.py"):
        module.write_text(module.read_text().replace("examples.link_parts", "lab_parts"))
    return folder


@pytest.mark.slow
def test_the_sweep_runs_as_a_ray_job_on_a_token_authenticated_head_with_the_job_s_own_parts(
        tmp_path, tracking_server):
    """``ray start --head`` with token auth, then ``ray job submit
    --working-dir`` of the sweep, recording to the tracking server; the
    working folder ships the encoder layer the trial trains, whose package
    is nowhere else, and the trial searches its settings."""
    port, dashboard = free_port(), free_port()
    temp = Path(os.environ.get("TMPDIR", "/tmp")) / f"plnlp-job-{os.getpid()}-{port}"
    root = write_ddi_standin(tmp_path / "datasets")
    cached_load(tmp_path / "cache", "ddi", root)
    project = ship_parts(tmp_path / "project")
    space = write_space(tmp_path, OPTUNA_SPACE.replace("num_samples: 2", "num_samples: 1")
                        + "  encoder_options.train_eps: {choice: [true]}\n")
    env = pipeline_env(tmp_path, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="the-cluster-token")
    head = ["ray", "start", "--head", f"--port={port}", f"--temp-dir={temp}", "--block",
            "--num-cpus=1", "--include-dashboard=true", f"--dashboard-port={dashboard}",
            "--dashboard-host=127.0.0.1", "--disable-usage-stats",
            f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}"]
    runtime_env = {"env_vars": {"MLFLOW_TRACKING_URI": tracking_server,
                                "PLNLP_CACHE_DIR": str(tmp_path / "cache")}}
    submit = ["ray", "job", "submit", f"--address=http://127.0.0.1:{dashboard}",
              f"--runtime-env-json={json.dumps(runtime_env)}", f"--working-dir={project}",
              "--", sys.executable, str(REPO_ROOT / "pipelines" / "tune.py"), "--dataset", "ddi",
              "--space", str(space), "--data-root", str(root), "--experiment", "job", *TINY,
              "--set", "epochs=1", "--set", "encoder=lab_parts.layers:GINLayer"]
    with process_group(head, env, tmp_path, tmp_path / "head.log") as process:
        deadline = time.monotonic() + 120
        while not jobs_answer(f"http://127.0.0.1:{dashboard}", env["RAY_AUTH_TOKEN"]):
            assert time.monotonic() < deadline and process.poll() is None, \
                (tmp_path / "head.log").read_text()[-2000:]
            time.sleep(0.5)
        job = submit_job(submit, env, timeout=600)
    shutil.rmtree(temp, ignore_errors=True)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    parent, children = sweep_runs(tracking_server, "job")
    assert parent.info.status == "FINISHED" and len(children) == 1
    (trial,) = children
    assert trial.info.status == "FINISHED", trial.data.tags.get("failure_reason")
    assert trial.data.params["encoder_options.train_eps"] == "True"
    assert parent.data.params["encoder"] == "lab_parts.layers:GINLayer"
    assert trial.data.params["encoder_version"].startswith("sha256:")
