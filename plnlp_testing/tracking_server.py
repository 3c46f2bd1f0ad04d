"""An MLflow tracking server for the tests and the benchmarks: ``mlflow
server`` on a free port of 127.0.0.1, its runs in an SQLite file, that can be
stopped and started again as a crashed pod or a failover ends it."""
import sys
from contextlib import ExitStack
from pathlib import Path

from plnlp_testing.processes import free_port, pipeline_env, process_group, wait_for_http
from plnlp_testing.warm_start import empty_tracking_store

__all__ = ["TrackingServer"]


class TrackingServer:
    """``mlflow server`` on a free port, its runs in ``folder``'s SQLite
    file (made with its tables: see :mod:`plnlp_testing.warm_start`): the
    same server each time it is started. Without MLflow's job runner, as
    docs/cluster.md starts a team's: its ten processes' polling would take
    half a core from the test beside it."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        folder.mkdir()
        empty_tracking_store(folder / "mlflow.db")
        self.started: list[ExitStack] = []

    def start(self) -> None:
        argv = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
                f"sqlite:///{self.folder / 'mlflow.db'}", "--artifacts-destination",
                str(self.folder / "artifacts"), "--host", "127.0.0.1", "--port", str(self.port),
                "--workers", "1"]
        log = self.folder / f"server-{len(self.started)}.log"
        running = ExitStack()
        env = pipeline_env(self.folder, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false")
        running.enter_context(process_group(argv, env, self.folder, log))
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
