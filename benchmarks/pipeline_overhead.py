"""What the Ray pipeline adds to :func:`plnlp_core.training.fitting.fit`: the median
epoch through ``pipelines/run.py`` over ``fit``'s in this process, and the
seconds from the command to its first epoch, phase by phase.

The only part of the benchmark that needs Ray and MLflow: it imports them,
and the pipeline's modules that import them, when it runs, so that the rest
runs on a GPU machine without them."""
import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from timing import median_epoch_interval, median_interval
from workloads import Workload, preset_config

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit, resolve_data_root
from plnlp_core.errors import PLNLPError
from plnlp_core.training.experiment import prepare_experiment, run_experiment

ROOT = Path(__file__).resolve().parents[1]
EPOCHS = 30  # fewer would let the controller's first MLflow writes sway the median
SHORT_EPOCHS = {"epochs": EPOCHS, "max_batches_per_epoch": 2}


def time_pipeline(data_root: str | None, split: LinkSplit, start_runs: int = 2) -> dict | None:
    """On short epochs (ddi ``smoke`` with two batches an epoch, evaluated
    every epoch), where a fixed cost per epoch shows: the median wall time
    between epochs as MLflow logged them through ``pipelines/run.py`` over
    the median between epochs of ``fit`` in this process; then, from the
    last of ``start_runs`` fresh commands (the second finds the stage cache
    warm), the seconds to the first epoch, phase by phase. ``None`` without
    Ray or MLflow."""
    if any(importlib.util.find_spec(name) is None for name in ("ray", "mlflow")):
        return None
    threads = torch.get_num_threads()
    fit_s = median_fit_epoch(preset_config(Workload("ddi smoke, 2 batches", "ddi", "smoke",
                                                    "real", 0, SHORT_EPOCHS)), split)
    with tempfile.TemporaryDirectory() as folder:
        pipeline_s = median_pipeline_epoch(data_root, Path(folder), threads)
        startup = startup_phases_of_a_command(data_root, Path(folder), threads, start_runs)
    return {"config": f"ddi smoke, 2 batches an epoch, evaluated every epoch, {EPOCHS} epochs, "
                      f"1 worker x {threads} CPUs",
            "fit_median_epoch_s": fit_s, "pipeline_median_epoch_s": pipeline_s,
            "overhead_ratio": pipeline_s / fit_s, "startup": startup}


def median_fit_epoch(config: PLNLPConfig, split: LinkSplit) -> float:
    """The median wall time between the ends of ``fit``'s epochs, evaluation included."""
    ends: list[float] = []
    run_experiment(prepare_experiment(config, split),
                   on_epoch=lambda result: ends.append(time.perf_counter()))
    return median_interval(ends)


def median_pipeline_epoch(data_root: str | None, folder: Path, threads: int) -> float:
    """The median wall time between the epochs of ``pipelines/run.py``'s
    ``main`` on short epochs, called here on a local Ray of ``threads`` CPUs
    with its MLflow store in ``folder``, as MLflow logged them."""
    import mlflow
    import ray

    from pipelines.run import main as run_pipeline

    os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{folder}/mlflow.db"
    ray.init(address="local", num_cpus=max(threads, 1), include_dashboard=False,
             log_to_driver=False)
    settings = [arg for key, value in SHORT_EPOCHS.items() for arg in ("--set", f"{key}={value}")]
    with contextlib.redirect_stdout(sys.stderr):
        code = run_pipeline(["--dataset", "ddi", "--preset", "smoke", *settings,
                             "--data-root", str(resolve_data_root(data_root)),
                             "--cpus-per-worker", str(threads), "--experiment", "benchmark"])
    ray.shutdown()
    if code != 0:
        raise PLNLPError(f"the pipeline run of the benchmark failed (exit {code}).")
    client = mlflow.MlflowClient()
    run = client.search_runs([client.get_experiment_by_name("benchmark").experiment_id])[0]
    return median_epoch_interval(client, run.info.run_id)


def startup_phases_of_a_command(data_root: str | None, folder: Path, threads: int,
                                runs: int = 2) -> dict[str, float]:
    """``startup_*_s`` of ``pipelines/run.py --dataset ddi --preset smoke``
    run as a user runs it (its own local Ray), one epoch, the last of
    ``runs`` runs (from the second on, the stage cache is warm); with ``command_s``, that run's
    wall time, and ``after_last_epoch_s``, the part of it after its last
    epoch ended (the final metrics, the model, Ray's shutdown, the exit)."""
    import mlflow

    from components.recording.metric_names import run_metrics

    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/startup.db",
           "PLNLP_CACHE_DIR": str(folder / "cache")}
    env.pop("RAY_ADDRESS", None)
    command = [sys.executable, str(ROOT / "pipelines" / "run.py"), "--dataset", "ddi",
               "--preset", "smoke", "--set", "epochs=1", "--experiment", "startup",
               "--data-root", str(resolve_data_root(data_root)),
               "--cpus-per-worker", str(threads)]
    for _ in range(runs):
        started = time.time()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        ended = time.time()
        if done.returncode != 0:
            raise PLNLPError(f"the benchmark's start-up run failed (exit {done.returncode}): "
                             f"{done.stderr.strip()[-500:]}")
    client = mlflow.MlflowClient(env["MLFLOW_TRACKING_URI"])
    run = client.search_runs([client.get_experiment_by_name("startup").experiment_id],
                             order_by=["attributes.start_time DESC"])[0]
    last_epoch = max(m.timestamp for m in client.get_metric_history(run.info.run_id,
                                                                    "train_loss")) / 1000
    return {**{key: value for key, value in run_metrics(run.data.metrics).items()
               if key.startswith("startup_")},
            "command_s": ended - started, "after_last_epoch_s": ended - last_epoch,
            "stage_cache": "warm" if runs > 1 else "cold"}
