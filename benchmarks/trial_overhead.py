"""What a sweep's trial costs beyond its training.

    python benchmarks/trial_overhead.py [--trials 5] [--epochs 4] [--data-root DIR]

Runs ``pipelines/tune.py`` as a user runs it (its own local Ray, an MLflow
SQLite store in a scratch folder) on the real ogbl-ddi: ``--trials`` trials
of the ``smoke`` preset, one at a time, each ``--epochs`` epochs. From the
trials' MLflow runs it prints, for each trial but the last, the seconds
from its start to the next trial's start less its ``fit_seconds`` (the
training itself): what starting, recording and ending a trial costs, with
the run's own length and the gap between one run's end and the next one's
start (Ray Tune's part) beside it. Goal:
a median of at most 5 s on 2 cores (issue 31), where a trial that started
a Ray Train worker group cost 42.5-44.0 s.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPACE = """
preset: smoke
metric: valid_hits_20
search: random
num_samples: {trials}
max_concurrent: 1
resources: {{workers: 1, cpus_per_worker: 1}}
space:
  lr: {{loguniform: [0.001, 0.02]}}
"""


def trial_costs(data_root: str | None, trials: int, epochs: int) -> dict[str, object]:
    """Runs the sweep; returns its wall time and, per trial, its
    ``fit_seconds`` and its cost beyond them (the last trial's is unknown:
    no trial starts after it)."""
    with tempfile.TemporaryDirectory(prefix="plnlp-trials-") as scratch:
        folder = Path(scratch)
        (folder / "space.yaml").write_text(SPACE.format(trials=trials))
        env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{folder}/mlflow.db",
               "PLNLP_CACHE_DIR": str(folder / "cache")}
        env.pop("RAY_ADDRESS", None)
        command = [sys.executable, str(ROOT / "pipelines" / "tune.py"), "--dataset", "ddi",
                   "--space", str(folder / "space.yaml"), "--experiment", "trials",
                   "--set", f"epochs={epochs}", "--set", f"checkpoint_every={epochs}",
                   *(["--data-root", data_root] if data_root else [])]
        started = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"the sweep failed (exit {done.returncode}): "
                             f"{done.stderr.strip()[-800:]}")
        return {"wall_s": wall, "trials": _trials(env["MLFLOW_TRACKING_URI"])}


def _trials(uri: str) -> list[dict[str, float]]:
    """Each trial's start, ``fit_seconds`` and cost beyond them, by start."""
    import mlflow

    from components.recording.metric_names import run_metrics

    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("trials").experiment_id])
    children = sorted((run for run in runs if "mlflow.parentRunId" in run.data.tags),
                      key=lambda run: run.info.start_time)
    rows = [{"start_s": run.info.start_time / 1000, "end_s": run.info.end_time / 1000,
             "fit_s": run_metrics(run.data.metrics)["fit_seconds"]} for run in children]
    for row, following in zip(rows, rows[1:], strict=False):
        row["beyond_fit_s"] = following["start_s"] - row["start_s"] - row["fit_s"]
        row["between_s"] = following["start_s"] - row["end_s"]
    return rows


def costs_table(figures: dict[str, object]) -> str:
    """The trials, one line each, and the median cost beyond training."""
    rows = figures["trials"]
    lines = [f"{'trial':>5}  {'fit s':>7}  {'run s':>7}  {'beyond fit s':>12}  "
             f"{'between runs s':>14}"]
    for number, row in enumerate(rows, start=1):
        beyond, between = (f"{row[key]:{width}.1f}" if key in row else f"{'-':>{width}}"
                           for key, width in (("beyond_fit_s", 12), ("between_s", 14)))
        lines.append(f"{number:5d}  {row['fit_s']:7.1f}  {row['end_s'] - row['start_s']:7.1f}  "
                     f"{beyond}  {between}")
    costs = [row["beyond_fit_s"] for row in rows if "beyond_fit_s" in row]
    lines.append(f"median cost of a trial beyond its training: {statistics.median(costs):.1f} s "
                 f"(goal: at most 5 s); the sweep took {figures['wall_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5, help="trials, one at a time")
    parser.add_argument("--epochs", type=int, default=4, help="epochs of each trial")
    parser.add_argument("--data-root", help="folder holding ogbl_ddi (default: $PLNLP_DATA_ROOT)")
    args = parser.parse_args(argv)
    if args.trials < 2:
        parser.error("--trials must be at least 2: a trial's cost is measured to the next")
    print(costs_table(trial_costs(args.data_root, args.trials, args.epochs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
