"""A tracking server that goes away in mid-training and comes back: the run
trains on meanwhile and every epoch reaches MLflow once it is back; one
that stays away past the patience fails the run with how to deliver them,
and ``--resume`` does.

The job's MLflow client is told to give up on a request at once
(``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0``), so that a short outage outlasts
its retries as a 5-minute one outlasts the default's (about 4 minutes);
the product's own retries then carry the run."""
import re
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.pipelines.test_errors import REPO_ROOT, SMOKE
from tests.processes import free_port, pipeline_env, process_group, wait_for_http

EPOCHS = 40


class TrackingServer:
    """``mlflow server`` on a free port, its runs in ``folder``'s SQLite
    file: the same server each time it is started."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        folder.mkdir()
        self.started: list[ExitStack] = []

    def start(self) -> None:
        argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                f"sqlite:///{self.folder / 'mlflow.db'}", "--artifacts-destination",
                str(self.folder / "artifacts"), "--host", "127.0.0.1", "--port", str(self.port),
                "--workers", "1"]
        log = self.folder / f"server-{len(self.started)}.log"
        running = ExitStack()
        running.enter_context(process_group(argv, pipeline_env(self.folder), self.folder, log))
        self.started.append(running)
        wait_for_http(f"{self.uri}/health", log, timeout=120)

    def stop(self) -> None:
        """Kills it, as a crashed pod or a failover ends it."""
        self.started[-1].close()

    def __enter__(self) -> "TrackingServer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        for running in self.started:
            running.close()


def printed_epochs(log: Path) -> int:
    """The last epoch the run's log shows, 0 if none."""
    return max((int(n) for n in re.findall(rf"epoch (\d+)/{EPOCHS}", log.read_text())),
               default=0)


def wait_until(condition, log: Path, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)


def run_command(ddi_root: Path, tmp_path: Path, uri: str, *extra: str) -> tuple[list, dict]:
    argv = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), *SMOKE, "--data-root",
            str(ddi_root), "--work-dir", str(tmp_path / "work"), "--set", f"epochs={EPOCHS}",
            "--set", "max_batches_per_epoch=2", "--set", "checkpoint_every=5", *extra]
    env = pipeline_env(tmp_path, MLFLOW_TRACKING_URI=uri, MLFLOW_HTTP_REQUEST_MAX_RETRIES="0",
                       MLFLOW_HTTP_REQUEST_TIMEOUT="5")
    return argv, env


def logged_epochs(uri: str, run_id: str) -> list[int]:
    return sorted(m.step for m in MlflowClient(uri).get_metric_history(run_id, "train_loss"))


@pytest.mark.slow
def test_a_tracking_server_away_in_mid_training_gets_every_epoch_once_it_is_back(
        ddi_root, tmp_path):
    """Stopped at epoch 3 and started again (same database) after the run
    has trained on for a while: the run finishes with every epoch once."""
    log = tmp_path / "run.log"
    with TrackingServer(tmp_path / "server") as server:
        server.start()
        argv, env = run_command(ddi_root, tmp_path, server.uri)
        with process_group(argv, env, tmp_path, log) as process:
            wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
            server.stop()
            stopped_at = printed_epochs(log)
            wait_until(lambda: "tracking server does not answer" in log.read_text(), log, 60)
            wait_until(lambda: printed_epochs(log) >= stopped_at + 8, log, within_s=60)
            server.start()
            code = process.wait(timeout=300)
        assert code == 0, log.read_text()[-3000:]
        assert "MLflow's tracking server answers again after " in log.read_text()
        client = MlflowClient(server.uri)
        (finished,) = client.search_runs([client.get_experiment_by_name("plnlp-ddi").experiment_id])
        assert finished.info.status == "FINISHED"
        assert logged_epochs(server.uri, finished.info.run_id) == list(range(1, EPOCHS + 1))
        assert "final/test_hits_20" in finished.data.metrics  # logged by the driver, after


@pytest.mark.slow
def test_a_server_away_past_the_patience_fails_the_run_and_resume_logs_what_it_measured(
        ddi_root, tmp_path):
    """With a patience of 5 s, a server stopped at epoch 3 and not back by
    the end: the run trains to its end, then fails with how to go on;
    ``--resume`` once the server is back logs every epoch and finishes."""
    log = tmp_path / "run.log"
    with TrackingServer(tmp_path / "server") as server:
        server.start()
        argv, env = run_command(ddi_root, tmp_path, server.uri)
        env["PLNLP_TRACKING_PATIENCE_S"] = "5"
        with process_group(argv, env, tmp_path, log) as process:
            wait_until(lambda: printed_epochs(log) >= 3, log, within_s=240)
            server.stop()
            code = process.wait(timeout=300)
        output = log.read_text()
        assert code != 0 and printed_epochs(log) == EPOCHS, output[-3000:]
        (error,) = [line for line in output.splitlines() if line.startswith("error:")]
        assert "has not answered for " in error and "kept in the run's checkpoints" in error
        run_id = re.search(r"--resume (\w+)`", error).group(1)
        server.start()
        assert logged_epochs(server.uri, run_id)[-1] < EPOCHS
        resume = [sys.executable, str(REPO_ROOT / "pipelines" / "run.py"), "--resume", run_id]
        with process_group(resume, env, tmp_path, tmp_path / "resume.log") as process:
            code = process.wait(timeout=300)
        assert code == 0, (tmp_path / "resume.log").read_text()[-3000:]
        assert logged_epochs(server.uri, run_id) == list(range(1, EPOCHS + 1))
        assert MlflowClient(server.uri).get_run(run_id).info.status == "FINISHED"
