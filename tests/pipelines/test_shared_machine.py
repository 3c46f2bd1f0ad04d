"""A machine other people's Ray runs on too: a run without ``RAY_ADDRESS``
starts a Ray of its own instead of joining theirs, without Ray's "multiple
active Ray instances" traceback, and docs/cluster.md's head of one's own on
fixed ports takes a job that keeps its MLflow artifacts beside the tracking
store, not in Ray's job folder."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mlflow
import psutil
import pytest

from plnlp_testing.processes import free_port, pipeline_env, process_group, wait_for_http
from plnlp_testing.warm_start import cached_load, empty_tracking_store
from tests.conftest import REPO_ROOT

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
    env = pipeline_env(tmp_path, MLFLOW_TRACKING_URI=empty_tracking_store(tmp_path / "mlflow.db"))
    cached_load(tmp_path / "cache", "ddi", standin_root)
    # two CPUs a worker: the other head's one CPU could not hold it, a Ray of its own does
    done = subprocess.run([sys.executable, "pipelines/run.py", "--dataset", "ddi",
                           "--data-root", str(standin_root), *TINY, "--cpus-per-worker", "2"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "multiple active Ray instances" not in output and "Traceback" not in output


def bash_block(document: Path, section: str) -> str:
    """The first ``bash`` block under the heading ``section`` of ``document``."""
    text = document.read_text().split(f"\n## {section}\n", 1)[1]
    return re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)


def both_nodes_counted(port: str, env: dict[str, str]) -> bool:
    """Whether ``ray status`` of the head on ``port`` counts both nodes' 4
    CPUs within 30 s: the block's own ``ray status``, run right after the
    second node started, may come before Ray's autoscaler state has it."""
    token = (Path.home() / ".ray" / "auth_token").read_text().strip()
    status = ["ray", "status", "--address", f"127.0.0.1:{port}"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = subprocess.run(status, env={**env, "RAY_AUTH_MODE": "token",
                                           "RAY_AUTH_TOKEN": token},
                              capture_output=True, text=True, timeout=60)
        if "4.0 CPU" in done.stdout:
            return True
        time.sleep(1)
    return False


def processes_of(folder: str) -> list[psutil.Process]:
    """This machine's processes whose command line names ``folder``."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if folder in " ".join(process.info["cmdline"] or []):
            found.append(process)
    return found


def test_the_sharing_one_machine_commands_of_cluster_md_run_as_written(standin_root, tmp_path):
    """docs/cluster.md's head of one's own beside another's, run line by line
    as written but for its temp folders (this test's), its ``<…>`` (a SQLite
    store of this test's, the stand-in ddi) and a few batches: both nodes
    join on their ports, the job sent with the token and ``--working-dir .``
    finishes its run with each epoch's line printed once and its MLflow
    artifacts beside the tracking store (not in Ray's job folder), the machine's
    current-cluster address is left as it was, and the last line ends every
    process of that cluster.

    Every port the block fixes lies below the kernel's range of free ports
    handed out on request. The block's agent ports were 52375-52390, inside
    that range, and twice (a clean clone's ``.ci/run``, then CI) ``ray start
    --head`` waited Ray's 30 s for "The current node timed out during
    startup", as it does when another process holds one of them (a socket
    on 52379 reproduces it): the suite's Rays take dozens of such ports."""
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's sockets live under it
    store = tmp_path / "mlflow.db"
    empty_tracking_store(store)
    cached_load(tmp_path / "cache", "ddi", standin_root)
    filled = {"/tmp/ray-mine": temp, "<sqlite:////abs/path/mlflow.db>": f"sqlite:///{store}",
              "<abs/path/holding/ogbl_ddi>": str(standin_root),
              "--preset smoke": f"--preset smoke {' '.join(TINY[2:])} --experiment mine"}
    block = bash_block(REPO_ROOT / "docs" / "cluster.md", "Sharing one machine")
    for placeholder, value in filled.items():
        assert placeholder in block, placeholder
        block = block.replace(placeholder, value)
    lowest_handed_out = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    fixed_ports = [int(port) for port in re.findall(r"--\S*port (\d+)", block)]
    assert len(fixed_ports) == 19 and max(fixed_ports) < lowest_handed_out, fixed_ports
    *steps, stop = block.rstrip("\n").rsplit("\n", 1)
    assert steps[0].count(temp) == 2 and "--working-dir ." in steps[0] and temp in stop
    current = Path("/tmp/ray/ray_current_cluster")
    before = current.read_bytes() if current.exists() else None
    env = {k: v for k, v in pipeline_env(tmp_path).items() if not k.startswith("RAY_")}
    started: list[psutil.Process] = []
    try:
        for name, script in (("steps.sh", steps[0]), ("stop.sh", stop)):
            (tmp_path / name).write_text(script)
            # each step must succeed; the stop line's kills may find a child already gone
            checked = ["-e"] if name == "steps.sh" else []
            done = subprocess.run(["bash", *checked, str(tmp_path / name)], cwd=REPO_ROOT,
                                  env=env, capture_output=True, text=True, timeout=600)
            output = done.stdout + done.stderr
            if name == "steps.sh":
                assert done.returncode == 0, output[-3000:]
                assert "succeeded" in output, output[-3000:]
                head = re.search(r"ray start --head .*?--port (\d+)", steps[0]).group(1)
                assert "4.0 CPU" in output or both_nodes_counted(head, env), output[-3000:]
                assert "Errno" not in output, output[-3000:]
                assert len(re.findall(r"\) epoch 1/2 ", output)) == 1, output[-3000:]
                assert (current.read_bytes() if current.exists() else None) == before
                started = [each for process in processes_of(temp)
                           for each in (process, *process.children(recursive=True))]
                assert len(started) > 4  # two raylets, the GCS, their agents
        _, alive = psutil.wait_procs(started, timeout=30)
        assert alive == [], f"the last line left {alive}"
    finally:
        for process in [*processes_of(temp), *started]:
            if process.is_running():
                os.kill(process.pid, signal.SIGKILL)
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(f"{temp}-2", ignore_errors=True)
    mlflow.set_tracking_uri(f"sqlite:///{store}")
    experiment = mlflow.get_experiment_by_name("mine")
    (run,) = mlflow.search_runs([experiment.experiment_id], output_format="list")
    assert run.info.status == "FINISHED"
    # the job's MLflow artifacts are beside the tracking store, not in Ray's job folder
    beside = store.parent / "mlartifacts"
    assert experiment.artifact_location == beside.as_uri()
    assert run.info.artifact_uri.startswith(beside.as_uri())
    kept = {path.name for path in beside.rglob("*") if path.is_file()}
    assert {"metrics.csv", "learning_curve.png", "config.yaml", "MLmodel"} <= kept
