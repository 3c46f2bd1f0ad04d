"""A real cluster on one machine: a Ray head without CPUs and two worker
nodes, each with a temp folder of its own, an S3 server holding the work
folder and the raw dataset, and an MLflow server whose runs live in
PostgreSQL and whose artifacts live in that S3 server. The data is
uploaded, the tracking server started and the job submitted by
docs/cluster.md's own commands (its steps 1, 2 and 4, the ``<…>`` filled
in), ``--working-dir .`` included; no node shares a folder with another
through the product."""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
from mlflow.tracking import MlflowClient

from plnlp_testing.object_store import (
    KEYS,
    bucket_keys,
    make_bucket,
    objects_holding,
    s3_filesystem,
    s3_server,
)
from plnlp_testing.postgres import database_holds, postgres_server
from plnlp_testing.processes import (
    free_port,
    process_group,
    ray_jobs,
    submit_job,
    training_processes,
    wait_for_http,
)
from tests.conftest import REPO_ROOT, start_suite_ray

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
    database: str
    folder: Path


def documented_step(number: int, filled: dict[str, str]) -> str:
    """The ``bash`` block of docs/cluster.md's step ``number``, each
    ``<…>`` (and any other text) of ``filled`` replaced by its value."""
    text = (REPO_ROOT / "docs" / "cluster.md").read_text()
    step = text.split(f"\n{number}. **", 1)[1].split(f"\n{number + 1}. **", 1)[0]
    block = textwrap.dedent(re.search(r"\n( *)```bash\n(.*?)\n *```", step, re.DOTALL)
                            .group(0)).strip().removeprefix("```bash").removesuffix("```").strip()
    for placeholder, value in filled.items():
        assert placeholder in block, f"step {number} of docs/cluster.md has no {placeholder}"
        block = block.replace(placeholder, value)
    assert "<" not in re.sub(r"<<|\$\(<", "", block), f"step {number} left a placeholder: {block}"
    return block


def store_placeholders(endpoint: str) -> dict[str, str]:
    return {"<key>": KEYS["AWS_ACCESS_KEY_ID"], "<secret>": KEYS["AWS_SECRET_ACCESS_KEY"],
            "<bucket>": "work"}


@pytest.fixture(scope="module")
def services(tmp_path_factory, ddi_root):
    """The S3 server (buckets ``work``, with the raw ogbl-ddi under ``ogb/``,
    and ``artifacts``), PostgreSQL, the MLflow server on it and the
    three-node Ray cluster."""
    import ray
    from ray.cluster_utils import Cluster

    suite_ray = ray.is_initialized()  # the suite's local Ray, in this process: not beside this
    if suite_ray:
        ray.shutdown()
    folder = tmp_path_factory.mktemp("cluster")
    with s3_server(folder) as endpoint, postgres_server() as database, \
            mlflow_server(folder, endpoint, database) as tracking_uri:
        make_bucket(endpoint, "work")
        upload = documented_step(1, {**store_placeholders(endpoint), "data/ogbl_ddi":
                                     str(ddi_root / "ogbl_ddi"), "<http://minio:9000; leave "
                                     "it unset for AWS itself>": endpoint})
        done = subprocess.run(["bash", "-ec", upload], env={**os.environ, "AWS_REGION":
                              KEYS["AWS_REGION"]}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        port = free_port()
        # Each node's agent on a port of its own: on one machine they would all race for Ray's
        # default (52365), and the head's, which takes the jobs, may lose
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "include_dashboard": True, "dashboard_host": "127.0.0.1",
            "dashboard_port": port, "dashboard_agent_listen_port": free_port()})
        try:
            for _ in range(2):
                add_worker_node(cluster)
            cluster.wait_for_nodes()
            dashboard = f"http://127.0.0.1:{port}"
            wait_for_http(f"{dashboard}/api/version", folder / "none", timeout=120,
                          any_status=True)
            yield Services(cluster, dashboard, endpoint, tracking_uri, database, folder)
        finally:
            cluster.shutdown()
            for node_folder in NODE_FOLDERS:
                shutil.rmtree(node_folder, ignore_errors=True)
            if suite_ray:  # back as tests/conftest.py started it, for the tests after these
                start_suite_ray()


NODE_FOLDERS: list[str] = []  # the worker nodes' temp folders, removed with the cluster


def add_worker_node(cluster: object, cpus: int = 1) -> object:
    """A worker node of ``cpus`` CPUs, its agent on a free port, in a temp
    folder of its own with its own log monitor, as docs/cluster.md's nodes
    sharing one machine: nodes sharing a temp folder would each unpack a
    job's working dir over the one the driver runs in, and each print every
    node's log lines."""
    temp = tempfile.mkdtemp(prefix="ray-node-", dir="/tmp")  # short: Ray's sockets live in it
    NODE_FOLDERS.append(temp)
    return cluster.add_node(num_cpus=cpus, dashboard_agent_listen_port=free_port(),
                            temp_dir=temp, include_log_monitor=True)


def mlflow_server(folder: Path, endpoint: str, database: str):
    """docs/cluster.md's ``mlflow server`` (step 2), its runs in the
    PostgreSQL ``database`` and its artifacts in the bucket ``artifacts``,
    proxied to its clients."""
    from contextlib import contextmanager

    @contextmanager
    def serve():
        make_bucket(endpoint, "artifacts")
        port = free_port()
        db = urlsplit(database)
        script = documented_step(2, {**store_placeholders(endpoint), "<http://minio:9000>":
                                     endpoint, "5000": str(port), "<mlflow-host>": "127.0.0.1",
                                     "s3://work/mlartifacts": "s3://artifacts",
                                     "<db-password>": db.password,
                                     "<db-host>:5432": f"{db.hostname}:{db.port}"})
        with process_group(["bash", "-ec", script], {**os.environ, "AWS_REGION":
                           KEYS["AWS_REGION"]}, folder, folder / "mlflow.log"):
            url = f"http://127.0.0.1:{port}"
            wait_for_http(f"{url}/health", folder / "mlflow.log", timeout=180)
            yield url

    return serve()


DOCUMENTED_JOB = ["pipelines/run.py", "--dataset", "ddi", "--preset", "smoke", "--data-root",
                  DATA, "--work-dir", WORK]


def submit(services: Services, command: list[str], job_env: dict[str, str],
           submission_id: str | None = None) -> subprocess.CompletedProcess:
    """docs/cluster.md's ``ray job submit`` (step 4, ``--working-dir .`` from
    the repository) of ``python <command>`` instead of its own, with
    ``job_env`` added to the job's environment variables (without waiting,
    given a ``submission_id``)."""
    token = (Path.home() / ".ray" / "auth_token").read_text().strip()
    host, port = services.dashboard.removeprefix("http://").split(":")
    block = documented_step(4, {**store_placeholders(services.endpoint),
                                "<the head's ~/.ray/auth_token>": token, "<head>:8265":
                                f"{host}:{port}", "http://<mlflow-host>:5000":
                                services.tracking_uri, "<http://minio:9000, or leave out "
                                "for AWS>": services.endpoint})
    export, submission = block.split("\n", 1)
    argv = shlex.split(submission.replace("\\\n", " "))
    split = argv.index("--")
    assert argv[split + 1:] == ["python", *DOCUMENTED_JOB], argv[split + 1:]
    runtime_env = json.loads(argv[argv.index("--runtime-env-json") + 1])
    # a job given a HOME of its own reads no ~/.ray/auth_token there: its workers get the token
    auth = {"RAY_AUTH_TOKEN": token} if "HOME" in job_env else {}
    runtime_env["env_vars"].update(auth, **job_env)
    argv[argv.index("--runtime-env-json") + 1] = json.dumps(runtime_env)
    env = {**os.environ, **dict(word.split("=", 1) for word in shlex.split(export)[1:])}
    argv = [*argv[:split], *(["--no-wait", "--submission-id", submission_id] if submission_id
                             else []), "--", "python", *command]
    return submit_job(argv, env, REPO_ROOT)  # the head's job agent starts after its dashboard


def runs_of(services: Services, experiment: str) -> list:
    client = MlflowClient(services.tracking_uri)
    found = client.get_experiment_by_name(experiment)
    return client.search_runs([found.experiment_id]) if found else []


EPOCHS, EVERY = 20, 2  # the node goes within the first checkpoints; the rest trains after it


def checkpoints_in_bucket(services: Services, world_size: int) -> tuple[int, int]:
    """The epochs of the newest checkpoint in the bucket that every worker
    finished writing, and of the one Train's controller holds (from the
    snapshot it keeps beside them: none for a training actor); 0 where
    there is none yet."""
    from components.train.checkpoint_reader import (
        CHECKPOINT_PREFIX,
        checkpoint_epoch,
        stored_checkpoints,
    )

    store = s3_filesystem(services.endpoint)
    keys = bucket_keys(services.endpoint, "work")
    folders = {f"work/{key.split('/' + CHECKPOINT_PREFIX, 1)[0]}" for key in keys
               if "/" + CHECKPOINT_PREFIX in key}
    complete = [found.epoch for folder in folders
                for found in stored_checkpoints(store, folder, world_size) if found.complete]
    held = [0]
    for key in keys:
        if key.endswith("/checkpoint_manager_snapshot.json"):
            try:
                with store.open_input_stream(f"work/{key}") as stream:
                    latest = json.loads(stream.read())["latest_checkpoint_result"]
            except (OSError, ValueError, KeyError):  # being written
                continue
            held.append(checkpoint_epoch(latest["checkpoint_dir_name"]) or 0 if latest else 0)
    return max(complete, default=0), max(held)


def training_node(services: Services) -> tuple[object, list[psutil.Process]]:
    """A worker node whose raylet started a Ray Train worker or the
    training actor, and those processes."""
    for node in list(services.cluster.worker_nodes):
        if workers := training_processes(node):
            return node, workers
    raise AssertionError("no Train worker or training actor on a worker node")


def printed_epochs(log: str) -> dict[str, list[int]]:
    """The epochs each training process printed, by its process id, in order."""
    by_worker: dict[str, list[int]] = {}
    for pid, epoch in re.findall(r"(?:RayTrainWorker|TrainingActor) pid=(\d+)[^)]*\) "
                                 r"epoch (\d+)/", log):
        by_worker.setdefault(pid, []).append(int(epoch))
    return by_worker


@pytest.mark.parametrize("workers", [1, 2])  # a training actor; a DDP worker group
def test_a_lost_node_costs_at_most_the_epochs_since_the_checkpoint_in_the_bucket(
        services, tmp_path, workers):
    """The training's node goes as soon as a checkpoint is whole in the
    bucket (for a worker group, once Train's controller holds a reported
    one, and a newer one, not yet reported, is whole): the run goes on from
    that one. A new node replaces the lost one, as an autoscaler would (a
    group of two needs both nodes' CPUs)."""
    job = f"lost-node-{workers}-{time.monotonic_ns()}"
    done = submit(services, [*DOCUMENTED_JOB, "--experiment", f"lost-node-{workers}",
                             "--num-workers", str(workers),
                             "--set", f"epochs={EPOCHS}", "--set", "max_batches_per_epoch=2",
                             "--set", f"checkpoint_every={EVERY}"],
                  {"RAY_DEDUP_LOGS": "0"}, submission_id=job)
    assert done.returncode == 0, done.stderr[-3000:]
    replaced = False
    try:
        deadline, held = time.monotonic() + 300, 0
        while (workers > 1 and not held) or checkpoints_in_bucket(services, workers)[0] <= held:
            assert time.monotonic() < deadline and job_status(services, job) in (
                "PENDING", "RUNNING"), job_logs(services, job)[-3000:]
            time.sleep(0.2)
            held = held or checkpoints_in_bucket(services, workers)[1]
        node, processes = training_node(services)
        services.cluster.remove_node(node)
        assert not psutil.wait_procs(processes, timeout=60)[1]  # nothing more gets written
        in_bucket = checkpoints_in_bucket(services, workers)[0]
        add_worker_node(services.cluster)
        replaced = True
        while job_status(services, job) in ("PENDING", "RUNNING"):
            assert time.monotonic() < deadline + 300, job_logs(services, job)[-3000:]
            time.sleep(1)
    finally:
        if not replaced:
            add_worker_node(services.cluster)  # for the tests after this one
        services.cluster.wait_for_nodes()
    log = job_logs(services, job)
    assert job_status(services, job) == "SUCCEEDED", log[-3000:]
    (run,) = runs_of(services, f"lost-node-{workers}")
    client = MlflowClient(services.tracking_uri)
    assert run.info.status == "FINISHED"
    logged = sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss"))
    assert logged == list(range(1, EPOCHS + 1))  # every epoch, once
    restored = sorted(m.value for m in client.get_metric_history(run.info.run_id,
                                                                 "restored_from_epoch"))
    # The first restart goes on from the newest checkpoint in the bucket, not the
    # controller's; a loaded machine may add restarts of its own, later ones.
    assert restored and restored[0] == in_bucket > held
    first, second, *_ = printed_epochs(log).values()
    assert second[0] == in_bucket + 1
    assert max(first) - in_bucket <= EVERY, first  # epochs done, then lost: the bound


TRIALS_AT_ONCE, SWEEP_EPOCHS, RUN_EPOCHS = 4, 2, 3
LOCK_WORDS = ("database is locked", "deadlock", "could not serialize")


def test_a_sweep_and_two_runs_at_once_are_all_recorded_in_postgresql(services, tmp_path):
    """A sweep of 4 trials, all at once, its Tune state in the bucket, and two
    runs submitted together beside it, all writing to the tracking server at
    once (on a node of 4 more CPUs, added for them): every trial and run
    FINISHED with each epoch once, and neither the server nor a job met a
    locked database or a deadlock. One of the two runs is given a home and
    a cache folder of its own: see :func:`assert_kept_in_the_bucket_and_the_server`."""
    space = tmp_path / "space.yaml"
    space.write_text(f"preset: smoke\nmetric: valid_hits_20\nsearch: grid\n"
                     f"max_concurrent: {TRIALS_AT_ONCE}\n"
                     "resources: {workers: 1, cpus_per_worker: 1}\n"
                     "space:\n  lr: {grid: [0.02, 0.001]}\n"
                     "  num_neg: {grid: [1, 2]}\n")
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    job_envs = {"bucket": {"HOME": str(home), "PLNLP_CACHE_DIR": str(cache)}, "together": {}}
    node = add_worker_node(services.cluster, cpus=TRIALS_AT_ONCE)
    try:
        services.cluster.wait_for_nodes()
        jobs = {experiment: f"{experiment}-{time.monotonic_ns()}" for experiment in job_envs}
        for experiment, job in jobs.items():
            done = submit(services, [*DOCUMENTED_JOB, *TINY, "--set", f"epochs={RUN_EPOCHS}",
                                     "--experiment", experiment], job_envs[experiment],
                          submission_id=job)
            assert done.returncode == 0, done.stderr[-3000:]
        done = submit(services, ["pipelines/tune.py", "--dataset", "ddi", "--space", str(space),
                                 *TINY, "--set", f"epochs={SWEEP_EPOCHS}", "--data-root", DATA,
                                 "--work-dir", WORK, "--experiment", "sweep"], {})
        deadline = time.monotonic() + 300
        while any(job_status(services, job) in ("PENDING", "RUNNING") for job in jobs.values()):
            assert time.monotonic() < deadline, job_logs(services, jobs["bucket"])[-3000:]
            time.sleep(1)
    finally:
        services.cluster.remove_node(node)
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "succeeded" in output, output[-4000:]
    logs = {experiment: job_logs(services, job) for experiment, job in jobs.items()}
    assert [job_status(services, job) for job in jobs.values()] == ["SUCCEEDED"] * 2, logs
    client = MlflowClient(services.tracking_uri)
    runs = runs_of(services, "sweep")
    (parent,) = [run for run in runs if "mlflow.parentRunId" not in run.data.tags]
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId")
                == parent.info.run_id]
    assert parent.info.status == "FINISHED"
    assert len(children) == 4 and {run.info.status for run in children} == {"FINISHED"}
    assert {(run.data.params["lr"], run.data.params["num_neg"]) for run in children} == {
        (lr, num_neg) for lr in ("0.02", "0.001") for num_neg in ("1", "2")}
    for run in children:
        assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss")
                      ) == list(range(1, SWEEP_EPOCHS + 1))
    submitted = {}
    for experiment in jobs:
        (run,) = runs_of(services, experiment)
        submitted[experiment] = run
        assert run.info.status == "FINISHED"
        assert sorted(m.step for m in client.get_metric_history(run.info.run_id, "train_loss")
                      ) == list(range(1, RUN_EPOCHS + 1))
    assert any(key.startswith("plnlp/tune/") for key in bucket_keys(services.endpoint, "work"))
    said = "\n".join([output, *logs.values(), (services.folder / "mlflow.log").read_text()])
    assert not [words for words in LOCK_WORDS if words in said.lower()], said[-4000:]
    assert_kept_in_the_bucket_and_the_server(services, submitted["bucket"], logs["bucket"],
                                             home, cache)


def assert_kept_in_the_bucket_and_the_server(services: Services, run: object, log: str,
                                             home: Path, cache: Path) -> None:
    """A submitted job's run, given a ``home`` and a ``cache`` folder of its
    own, printed each epoch once and no OS error, kept its work in the
    bucket and its artifacts in the tracking server's (its best checkpoint
    among them, not in a tag), wrote nothing to either folder, and wrote the
    store's secret key, which its environment holds, nowhere: not in its
    log, the buckets or the server's PostgreSQL, which holds the run."""
    assert "Errno" not in log, log[-4000:]
    assert len(re.findall(rf"\) epoch 1/{RUN_EPOCHS} ", log)) == 1, log[-4000:]
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")
    assert "plnlp.checkpoints" not in run.data.tags  # the best one is in the server now
    work = bucket_keys(services.endpoint, "work")
    assert any(key.startswith("plnlp/stages/load-") and key.endswith("/manifest.json")
               for key in work)
    artifacts = {key.rsplit("/", 1)[-1] for key in bucket_keys(services.endpoint, "artifacts")
                 if key.startswith(f"{run.info.experiment_id}/")}  # its experiment's alone
    assert {"model.pt", "best.json", "metrics.csv", "learning_curve.png", "MLmodel",
            "scorer.pt"} <= artifacts
    assert sorted(home.rglob("*")) == [] and sorted(cache.rglob("*")) == []
    secret = KEYS["AWS_SECRET_ACCESS_KEY"]
    assert secret not in log
    assert [key for bucket in ("work", "artifacts")
            for key in objects_holding(services.endpoint, bucket, secret)] == []
    assert database_holds(services.database, run.info.run_id)
    assert not database_holds(services.database, secret)


def job_status(services: Services, job: str) -> str:
    """The job's status word (``RUNNING``, ``SUCCEEDED``, ...), as ``ray job
    status`` says it (:func:`~plnlp_testing.processes.ray_jobs`: the loops
    that wait on a job ask every second or less)."""
    return job_client(services).get_job_status(job).value


def job_logs(services: Services, job: str) -> str:
    return job_client(services).get_job_logs(job)


def job_client(services: Services) -> object:
    token = (Path.home() / ".ray" / "auth_token").read_text().strip()
    return ray_jobs(services.dashboard, token)
