"""The work folder in object storage against a local folder, side by side
in one run: ddi ``smoke``'s start-up phases and seconds per epoch through
``pipelines/run.py``, and the seconds to write and read one checkpoint of
ddi's ``paper`` model.

    python benchmarks/bench_storage.py [--epochs 5] [--endpoint http://host:port] [--skip-pipeline]

Without ``--endpoint`` the S3 server is moto's, on 127.0.0.1, started here
(a stand-in for the network and the store: a real one adds its latency and
bandwidth). Each pipeline run is a command of its own with its own local Ray,
run twice so that the second finds its stage cache warm; the figures are the
second run's. A checkpoint is what a Train worker writes (model, Adam's
moments, the best state; :func:`components.train.checkpoint_writer.write_checkpoint`):
written locally, then copied into the work folder and back as Ray Train and
the restarts copy it.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow
import torch
from timing import timed

from components.recording.metric_names import run_metrics
from components.storage.location import Location
from components.train.checkpoint_writer import write_checkpoint
from pipelines.planning.presets import load_preset
from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, resolve_data_root
from plnlp_core.training.fit_state import FitState

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_REGION": "us-east-1"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5, help="smoke epochs per run")
    parser.add_argument("--endpoint", help="an S3 endpoint to use instead of moto's")
    parser.add_argument("--bucket", default="plnlp-bench", help="the bucket (created if absent)")
    parser.add_argument("--data-root", help="the folder holding ogbl_ddi")
    parser.add_argument("--skip-pipeline", action="store_true",
                        help="time the checkpoint alone, not the pipeline runs")
    return parser.parse_args(argv)


@contextmanager
def s3_endpoint(endpoint: str | None) -> Iterator[str]:
    """``endpoint``, or moto's S3 server on a free port for the block."""
    if endpoint:
        yield endpoint
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(60):
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait()


def make_bucket(name: str) -> None:
    """Creates the bucket ``name`` unless it exists."""
    import boto3

    client = boto3.client("s3")
    if name not in {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=name)


def pipeline_run(work_dir: str, epochs: int, data_root: str, folder: Path) -> dict[str, float]:
    """ddi ``smoke`` through ``pipelines/run.py`` with ``work_dir``, twice;
    the second run's start-up phases and mean epoch seconds."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/bench.db",
           "PLNLP_CACHE_DIR": str(folder / "cache")}
    env.pop("RAY_ADDRESS", None)
    experiment = f"storage-{abs(hash(work_dir))}"
    command = [sys.executable, str(ROOT / "pipelines" / "run.py"), "--dataset", "ddi",
               "--preset", "smoke", "--set", f"epochs={epochs}", "--experiment", experiment,
               "--data-root", data_root, "--work-dir", work_dir, "--cpus-per-worker", "2"]
    for _ in range(2):
        seconds, done = timed(lambda: subprocess.run(command, env=env, capture_output=True,
                                                     text=True, check=False))
        if done.returncode != 0:
            raise SystemExit(f"the run with --work-dir {work_dir} failed: "
                             f"{done.stderr.strip()[-800:]}")
    client = mlflow.MlflowClient(env["MLFLOW_TRACKING_URI"])
    run = client.search_runs([client.get_experiment_by_name(experiment).experiment_id],
                             order_by=["attributes.start_time DESC"])[0]
    epochs_s = [m.value for m in client.get_metric_history(run.info.run_id, "epoch_seconds")]
    return {**{key.removeprefix("startup_").removesuffix("_s"): value
               for key, value in run_metrics(run.data.metrics).items()
               if key.startswith("startup_")},
            "epoch": sum(epochs_s) / len(epochs_s), "command": seconds}


def paper_checkpoint(folder: Path) -> int:
    """Writes a checkpoint of ddi's ``paper`` model, with Adam's moments
    and a best state, into ``folder``; returns its bytes."""
    config = PLNLPConfig.from_mapping({**load_preset("ddi", "paper"), "dataset": "ddi"})
    model = build_model(config, DATASETS.get("ddi"), 4267)
    optimizer = torch.optim.Adam(model.parameters())
    sum(p.sum() for p in model.parameters()).backward()
    optimizer.step()
    state = FitState(epoch=1, model=model.state_dict(), optimizer=optimizer.state_dict(),
                     schedule=None, rng={"torch": torch.get_rng_state()}, sampler={},
                     best_epoch=1, best_metrics={"valid_hits_20": 0.5},
                     best_state=model.state_dict())
    folder.mkdir(parents=True)
    write_checkpoint(folder, state, 0, [], {})
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def copy_seconds(source: Path, work: Location, scratch: Path) -> tuple[float, float]:
    """Seconds to copy the folder ``source`` into ``work`` and back."""
    target = work / "checkpoint"
    target.remove()
    written, _ = timed(lambda: shutil.copytree(source, target.local_path()) if work.is_local
                       else target.upload(source))
    read, _ = timed(lambda: target.download(scratch / f"back-{time.monotonic_ns()}"))
    return written, read


def table(rows: dict[str, dict[str, float]], keys: list[str]) -> str:
    """A Markdown table: one row per key, one column per entry of ``rows``."""
    names = list(rows)
    lines = ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    lines += [f"| {key} | " + " | ".join(f"{rows[name].get(key, float('nan')):.2f}"
                                         for name in names) + " |" for key in keys]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Times the pipeline and a checkpoint with a local and an S3 work folder."""
    args = parse_args(argv)
    data_root = str(resolve_data_root(args.data_root).resolve())
    with s3_endpoint(args.endpoint) as endpoint, \
            tempfile.TemporaryDirectory(prefix="plnlp-bench-storage-") as scratch:
        if not args.endpoint:
            os.environ.update(KEYS)
        os.environ["AWS_ENDPOINT_URL"] = endpoint
        make_bucket(args.bucket)
        folder = Path(scratch)
        works = {"local folder": Location(folder / "work"),
                 "S3": Location(f"s3://{args.bucket}/bench-{os.getpid()}")}
        if not args.skip_pipeline:
            runs = {name: pipeline_run(work.uri, args.epochs, data_root, folder)
                    for name, work in works.items()}
            print(f"ddi smoke, {args.epochs} epochs, the second of two runs (seconds):")
            print(table(runs, sorted({key for run in runs.values() for key in run})))
        size = paper_checkpoint(folder / "checkpoint")
        copies = {name: copy_seconds(folder / "checkpoint", work, folder)
                  for name, work in works.items()}
        print(f"\none ddi paper checkpoint ({size / 2**20:.0f} MiB), seconds:")
        print(table({name: {"write": w, "read": r} for name, (w, r) in copies.items()},
                    ["write", "read"]))
        works["S3"].remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
