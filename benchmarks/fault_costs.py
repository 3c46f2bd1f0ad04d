"""What each fault costs a run of the main job.

    python benchmarks/fault_costs.py [--epochs 20] [--outage-s 60] [--only NAME ...]

Each scenario runs ddi ``smoke`` (``--epochs`` epochs of 2 batches, a
checkpoint every 5) as a user runs it: ``pipelines/run.py`` in a process
group of its own, with its own local Ray, beside the services the scenario
names (an SQLite store; an ``mlflow server``; moto's S3 server as the work
folder, reached through a proxy that can be taken down). It injects one fault
at a known epoch and, where the fault stops the run, goes on with
``--resume`` once the fault is gone, as the run's closing line says. One row
a scenario: what became of the run (its MLflow status, and whether MLflow
holds every epoch exactly once), the epochs trained again (the epochs its
training processes printed beyond ``--epochs``, read from their own logs in
the scenario's Ray folder, since a driver killed at once never shows the
last lines on their way to it), and the seconds beyond the same
run without the fault, its commands' wall time together, the outage's own
included. The lost node, which needs a cluster, is measured by
``tests/pipelines/test_cluster.py`` (at most ``checkpoint_every`` epochs).
Needs the test extra (moto's server).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import psutil
from mlflow.tracking import MlflowClient
from tables import format_rows

from plnlp_testing.object_store import make_bucket, s3_env, s3_server
from plnlp_testing.processes import pipeline_env, process_group
from plnlp_testing.proxy import PausableProxy
from plnlp_testing.tracking_server import TrackingServer

ROOT = Path(__file__).resolve().parents[1]

EVERY, AT = 5, 8  # a checkpoint every 5 epochs; a fault that stops the run at epoch 8
PATIENCE_S = "10"  # the patience of the scenarios that outlast it


class Service(NamedTuple):
    """What a scenario stops and starts again."""

    stop: Callable[[], None]
    start: Callable[[], None]


@dataclass
class Row:
    scenario: str
    fault: str
    status: str
    every_epoch_once: bool
    epochs_again: int
    seconds: float


class Bench:
    """One scenario's scratch folder, services and commands: what they
    printed, and how long they took together."""

    def __init__(self, folder: Path, epochs: int, data_root: str | None) -> None:
        self.folder, self.epochs, self.data_root = folder, epochs, data_root
        self.tracking_uri = f"sqlite:///{folder / 'mlflow.db'}"
        self.env = pipeline_env(folder, RAY_TMPDIR=str(folder))  # Ray adds ray/
        self.work = str(folder / "work")
        self.logs: list[Path] = []
        self.seconds = 0.0
        self.services = ExitStack()

    def use_tracking_server(self) -> Service:
        """An ``mlflow server`` that stops (killed) and starts on the same database."""
        server = self.services.enter_context(TrackingServer(self.folder / "server"))
        server.start()
        self.tracking_uri = server.uri
        return Service(stop=server.stop, start=server.start)

    def use_store(self) -> Service:
        """The work folder in a bucket of moto's server, behind a proxy
        that stops (refusing every connection) and starts."""
        endpoint = self.services.enter_context(s3_server(self.folder))
        make_bucket(endpoint, "work")
        proxy = PausableProxy(endpoint)
        proxy.up()
        self.env.update(s3_env(proxy.url))
        self.work = "s3://work/plnlp"
        return Service(stop=proxy.down, start=proxy.up)

    @contextmanager
    def command(self, *flags: str, **env: str) -> Iterator[subprocess.Popen]:
        """``pipelines/run.py`` with ``flags``, timed from its start to its
        exit, which the block's end waits for."""
        log = self.folder / f"command-{len(self.logs)}.log"
        self.logs.append(log)
        argv = [sys.executable, str(ROOT / "pipelines" / "run.py"), *flags]
        started = time.monotonic()
        with process_group(argv, {**self.env, "MLFLOW_TRACKING_URI": self.tracking_uri, **env},
                           self.folder, log) as process:
            yield process
            process.wait(timeout=1800)
        self.seconds += time.monotonic() - started

    def first(self, *flags: str, **env: str) -> Iterator[subprocess.Popen]:
        """The run, started anew."""
        return self.command(
            "--dataset", "ddi", "--preset", "smoke", "--work-dir", self.work,
            *(["--data-root", self.data_root] if self.data_root else []),
            "--set", f"epochs={self.epochs}", "--set", "max_batches_per_epoch=2",
            "--set", f"checkpoint_every={EVERY}", *flags, **env)

    def resume(self) -> None:
        """``--resume`` of the run, to its end."""
        with self.command("--resume", self.run().info.run_id):
            pass

    def wait_for_epoch(self, process: subprocess.Popen, epoch: int) -> None:
        """Returns once the newest command, ``process``, has printed ``epoch``."""
        deadline = time.monotonic() + 600
        while printed(self.logs[-1])[-1:] < [epoch]:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"epoch {epoch} never came:\n{self.logs[-1].read_text()[-2000:]}")
            time.sleep(0.1)

    def run(self) -> object:
        client = MlflowClient(self.tracking_uri)
        experiment = client.get_experiment_by_name("plnlp-ddi")
        (run,) = client.search_runs([experiment.experiment_id])
        return run

    def outcome(self) -> tuple[str, bool, int]:
        """The run's status, whether MLflow holds every epoch once, the epochs trained again."""
        run = self.run()
        steps = [m.step for m in MlflowClient(self.tracking_uri).get_metric_history(
            run.info.run_id, "train_loss")]
        logs = {log.resolve() for log in  # session_latest is a link to one of them
                (self.folder / "ray").glob("session_*/logs/worker-*.out")}
        trained = sum(len(printed(log, EPOCH_LINE)) for log in logs)
        return run.info.status, sorted(steps) == list(range(1, self.epochs + 1)), \
            trained - self.epochs


EPOCH_LINE = r"^epoch (\d+)/\d+ "  # a training process's own line, in its log
CONSOLE_EPOCH_LINE = r"\) epoch (\d+)/\d+ "  # the same as the driver shows it


def printed(log: Path, line: str = CONSOLE_EPOCH_LINE) -> list[int]:
    """The epochs a log shows, in order."""
    return [int(n) for n in re.findall(line, log.read_text(errors="replace"), re.MULTILINE)]


def training_actor(driver: subprocess.Popen, name: str) -> psutil.Process:
    """The process of the driver's local Ray whose title starts with ``name``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for child in psutil.Process(driver.pid).children(recursive=True):
            try:
                if " ".join(child.cmdline()).startswith(name):
                    return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.2)
    raise SystemExit(f"no {name} process under the driver")


# The scenarios: each takes a Bench and runs the commands of one fault ----------------------

def no_fault(bench: Bench, *flags: str) -> None:
    with bench.first(*flags):
        pass


def actor_killed(bench: Bench) -> None:
    with bench.first() as driver:
        bench.wait_for_epoch(driver, AT)
        training_actor(driver, "ray::TrainingActor").kill()


def ddp_worker_killed(bench: Bench) -> None:
    with bench.first("--num-workers", "2") as driver:
        bench.wait_for_epoch(driver, AT)
        training_actor(driver, "ray::RayTrainWorker").kill()


def sigterm_then_resume(bench: Bench) -> None:
    with bench.first() as driver:
        bench.wait_for_epoch(driver, AT)
        driver.send_signal(signal.SIGTERM)
    bench.resume()


def driver_lost_then_resume(bench: Bench) -> None:
    with bench.first() as driver:
        bench.wait_for_epoch(driver, AT)
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its local Ray: a lost head
    bench.resume()


def away_for_a_while(bench: Bench, service: Service, outage_s: float, **env: str) -> None:
    """``service`` stopped once epoch 3 is printed and started again ``outage_s`` later."""
    with bench.first(**env) as driver:
        bench.wait_for_epoch(driver, 3)
        service.stop()
        time.sleep(outage_s)
        service.start()


def away_past_patience(bench: Bench, service: Service, epoch: int, **env: str) -> None:
    """``service`` stopped once ``epoch`` is printed, started again once the
    run has failed, then ``--resume``."""
    with bench.first(**env) as driver:
        bench.wait_for_epoch(driver, epoch)
        service.stop()
    service.start()
    bench.resume()


def scenarios(outage_s: float) -> dict[str, tuple[str, str, Callable[[Bench], None]]]:
    """Each scenario's fault, the fault-free scenario it is measured
    against, and what it runs."""
    with_server = lambda bench: (bench.use_tracking_server(), no_fault(bench))  # noqa: E731
    with_store = lambda bench: (bench.use_store(), no_fault(bench))  # noqa: E731
    return {
        "local": ("none (SQLite store, local work folder)", "local", no_fault),
        "local-2-workers": ("none, 2 DDP workers", "local-2-workers",
                            lambda bench: no_fault(bench, "--num-workers", "2")),
        "tracking-server": ("none (mlflow server)", "tracking-server", with_server),
        "store": ("none (work folder in S3)", "store", with_store),
        "actor-killed": (f"the training actor SIGKILLed at epoch {AT}", "local", actor_killed),
        "ddp-worker-killed": (f"a DDP worker SIGKILLed at epoch {AT}", "local-2-workers",
                              ddp_worker_killed),
        "sigterm": (f"SIGTERM to the driver at epoch {AT}, then --resume", "local",
                    sigterm_then_resume),
        "driver-lost": (f"the driver and its Ray SIGKILLed at epoch {AT}, then --resume",
                        "local", driver_lost_then_resume),
        "tracking-away": (f"the tracking server stopped at epoch 3 for {outage_s:.0f} s",
                          "tracking-server", lambda b: away_for_a_while(
                              b, b.use_tracking_server(), outage_s)),
        "tracking-away-no-client-retries": (
            "the same, MLFLOW_HTTP_REQUEST_MAX_RETRIES=0 (the product's retries alone)",
            "tracking-server", lambda b: away_for_a_while(
                b, b.use_tracking_server(), outage_s, MLFLOW_HTTP_REQUEST_MAX_RETRIES="0")),
        "tracking-away-past-patience": (
            f"the tracking server stopped at epoch 3 until the run ends (patience {PATIENCE_S} "
            "s), then --resume", "tracking-server", lambda b: away_past_patience(
                b, b.use_tracking_server(), 3, PLNLP_TRACKING_PATIENCE_S=PATIENCE_S)),
        "store-away": (f"the S3 endpoint refusing connections at epoch 3 for {outage_s:.0f} s",
                       "store", lambda b: away_for_a_while(b, b.use_store(), outage_s)),
        "store-away-past-patience": (
            f"the S3 endpoint refusing connections from epoch {AT} until the run fails "
            f"(patience {PATIENCE_S} s), then --resume", "store", lambda b: away_past_patience(
                b, b.use_store(), AT, PLNLP_STORE_PATIENCE_S=PATIENCE_S)),
    }


def measure(name: str, run: Callable[[Bench], None], epochs: int,
            data_root: str | None) -> tuple[Bench, tuple[str, bool, int]]:
    """Runs one scenario in a scratch folder; the bench and its outcome."""
    # short: Ray's sockets live under it (107 bytes at most)
    with tempfile.TemporaryDirectory(prefix="plnlp-fault-", dir="/tmp") as scratch:
        bench = Bench(Path(scratch), epochs, data_root)
        with bench.services:
            run(bench)
            return bench, bench.outcome()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--outage-s", type=float, default=60)
    parser.add_argument("--only", nargs="*", help="scenarios to run (with their baselines)")
    parser.add_argument("--data-root", default=os.environ.get("PLNLP_DATA_ROOT"))
    args = parser.parse_args()
    table = scenarios(args.outage_s)
    wanted = args.only or list(table)
    unknown = sorted(set(wanted) - set(table))
    if unknown:
        raise SystemExit(f"unknown scenario {unknown[0]!r}; choose among {', '.join(table)}.")
    order = list(dict.fromkeys([table[name][1] for name in wanted] + wanted))
    rows, seconds = [], {}
    for name in order:
        fault, baseline, run = table[name]
        bench, (status, once, again) = measure(name, run, args.epochs, args.data_root)
        seconds[name] = bench.seconds
        rows.append(Row(name, fault, status, once, again, bench.seconds - seconds[baseline]))
        print(f"{name}: {status}, {again} epochs again, {bench.seconds:.1f} s", flush=True)
    print(format_rows(["scenario", "fault", "status", "every epoch once", "epochs again",
                       "s lost"],
                      [[r.scenario, r.fault, r.status, "yes" if r.every_epoch_once else "NO",
                        str(r.epochs_again), f"{r.seconds:.1f}"] for r in rows], left=(0, 1, 2)))


if __name__ == "__main__":
    main()
