"""A run whose driver vanished is not left RUNNING forever, and one whose
driver still runs is not resumed twice."""
import os
import re
import socket
import subprocess
import sys
import time
import uuid

import mlflow
import pytest
from mlflow.tracking import MlflowClient

import components.recording.driver_presence as presence
from components.recording.driver_presence import (
    driver_gone,
    driver_heartbeat,
    end_abandoned_runs,
    refuse_a_driven_run,
)
from components.recording.tags import (
    DRIVER_SEEN_TAG,
    DRIVER_TAG,
    FAILURE_TAG,
    PARENT_TAG,
    TUNE_STATE_TAG,
)
from plnlp_core.errors import PLNLPError


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    """One SQLite store for the module (making its tables takes seconds)."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('presence') / 'mlflow.db'}"
    MlflowClient(uri).search_experiments()
    return uri


@pytest.fixture
def client(store, monkeypatch) -> MlflowClient:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    mlflow.set_tracking_uri(store)
    return MlflowClient(store)


def dead_pid() -> int:
    """The pid of a process that has ended."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def running_run(client: MlflowClient, experiment_id: str, host: str, pid: int,
                seen_ago_s: float, **tags: str) -> str:
    run_id = client.create_run(experiment_id, tags=tags).info.run_id
    client.set_tag(run_id, DRIVER_TAG, f"{host}:{pid}")
    client.set_tag(run_id, DRIVER_SEEN_TAG, str(int(time.time() - seen_ago_s)))
    return run_id


def test_a_driver_is_gone_when_its_pid_ended_here_or_its_heartbeat_is_stale(client):
    experiment = client.create_experiment(uuid.uuid4().hex)
    here = socket.gethostname()
    alive = running_run(client, experiment, here, os.getpid(), seen_ago_s=5)
    ended = running_run(client, experiment, here, dead_pid(), seen_ago_s=5)
    elsewhere_fresh = running_run(client, experiment, "node-b", 12, seen_ago_s=60)
    elsewhere_stale = running_run(client, experiment, "node-b", 12, seen_ago_s=1200)
    untagged = client.create_run(experiment).info.run_id
    gone = {run_id: driver_gone(client.get_run(run_id)) for run_id in
            (alive, ended, elsewhere_fresh, elsewhere_stale, untagged)}
    assert gone[alive] is None and gone[elsewhere_fresh] is None and gone[untagged] is None
    assert re.fullmatch(rf"its driver, pid \d+ on {here}, last seen \d+ s ago, is gone",
                        gone[ended])
    assert gone[elsewhere_stale] == "its driver, pid 12 on node-b, last seen 20 min ago, is gone"


def test_the_next_command_marks_an_abandoned_run_and_its_seeds_failed(client):
    experiment = client.create_experiment(uuid.uuid4().hex)
    abandoned = running_run(client, experiment, socket.gethostname(), dead_pid(), seen_ago_s=30)
    seed = client.create_run(experiment, tags={PARENT_TAG: abandoned}).info.run_id
    sweep = running_run(client, experiment, "node-b", 7, seen_ago_s=3600,
                        **{TUNE_STATE_TAG: "/tmp/state"})
    alive = running_run(client, experiment, socket.gethostname(), os.getpid(), seen_ago_s=30)
    lines = end_abandoned_runs(experiment)
    assert len(lines) == 2
    assert lines[0 if abandoned in lines[0] else 1].startswith(f"run {abandoned} was left "
                                                               "RUNNING: its driver, pid ")
    for run_id in (abandoned, seed):
        run = client.get_run(run_id)
        assert run.info.status == "FAILED"
        assert run.data.tags[FAILURE_TAG].endswith(
            f"is gone; go on with: python pipelines/run.py --resume {abandoned}")
    assert client.get_run(sweep).data.tags[FAILURE_TAG].endswith(
        f"go on with: python pipelines/tune.py --resume {sweep}")
    assert client.get_run(alive).info.status == "RUNNING"
    assert end_abandoned_runs(experiment) == []


def test_a_run_whose_driver_runs_is_refused_and_a_gone_ones_is_not(client, monkeypatch):
    experiment = client.create_experiment(uuid.uuid4().hex)
    driven = running_run(client, experiment, "node-b", 12, seen_ago_s=60)
    with pytest.raises(PLNLPError, match=f"^run {driven} is still running \\(its driver, pid 12 "
                       "on node-b, was seen 6\\d s ago\\); stop it first"):
        refuse_a_driven_run(client.get_run(driven))
    monkeypatch.setenv(presence.STALE_ENV, "30")
    refuse_a_driven_run(client.get_run(driven))  # not seen for longer: gone


def test_a_driver_tags_its_run_and_beats_until_the_block_ends(client, monkeypatch):
    monkeypatch.setattr(presence, "HEARTBEAT_S", 0.2)
    run_id = client.create_run(client.create_experiment(uuid.uuid4().hex)).info.run_id
    with driver_heartbeat(run_id):
        first = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            first = first or client.get_run(run_id).data.tags.get(DRIVER_SEEN_TAG)
            if first is not None:
                break
            time.sleep(0.05)
        tags = client.get_run(run_id).data.tags
    assert tags[DRIVER_TAG] == f"{socket.gethostname()}:{os.getpid()}"
    assert abs(int(first) - time.time()) < 10
