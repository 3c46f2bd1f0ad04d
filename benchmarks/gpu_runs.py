"""Every GPU measurement issues 31 and 32 ask for, in one command on a GPU
host, the most wanted first, within a time budget:

    python benchmarks/gpu_runs.py --out DIR [--budget-s 540] [--only NAME ...] [--seeds 3]
                                  [--trials-per-gpu auto] [--list] [--smoke]

Jobs, in order (``--only`` picks some; ``--list`` prints them):

- ``paper-heart``: ddi ``paper``, one seed, scored under HeaRT too (500
  hard negatives a positive) beside OGB's Hits@20;
- ``variant:<name>``: each ddi variant of ``ddi_variants.yaml`` (a preset
  with ``--set`` overrides), ``--seeds`` seeds through ``pipelines/run.py``;
- ``ene``: ddi's ``ene`` (NCN's command, the edge level), ``--seeds`` seeds,
  against NCN's published 82.32 ± 6.10;
- ``ppa-ene-epoch``: ppa's ``ene`` on the real-size stand-in, its seconds per
  epoch and memory (``benchmarks/run.py --workload "ppa ene"``);
- ``ablation-sweep`` and ``ablation-runs``: the trials of
  ``tune_spaces/ablation.yaml`` as one sweep, several trials to the GPU
  (``--trials-per-gpu``), and the same configs through ``run.py`` one after
  the other (issue 31: the sweep's goal is at most 0.35 of the runs' time).

Before the jobs, it times importing Ray, MLflow and OGB in a new
interpreter, compiles the packages ``PYTHONPATH`` adds (the GPU bundle's,
unpacked from wheels without bytecode) and times the import again
(``benchmarks/import_bytecode.py``): every process Ray starts pays that
import, and the later jobs start with bytecode.

``--smoke`` runs every job on CPUs at one step an epoch, with the ppa
stand-in small: a check of the script itself before GPU time is spent.

A job whose estimate does not fit what is left of ``--budget-s`` is skipped,
and one still running when the budget ends is stopped. While a job runs,
``nvidia-smi`` samples the GPU's use and memory every half second. After
every job, ``DIR/gpu_runs.json`` holds each finished job's command, wall
seconds, exit status, GPU use, and the MLflow runs it made with their
``final/`` metrics (each command's output is in ``DIR/<job>-<i>.log``), so
that a host taken back midway leaves what finished. Runs use MLflow's store
at ``MLFLOW_TRACKING_URI`` (default: ``DIR/mlflow.db``) and the ddi at
``PLNLP_DATA_ROOT``.
"""
import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from import_bytecode import bytecode_figures, python_path_sites

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = Path(__file__).with_name("ddi_variants.yaml")
RUN = [sys.executable, "pipelines/run.py", "--dataset", "ddi", "--use-gpu", "--yes"]


@dataclass
class Job:
    """One command of the session, and what it is expected to take."""

    name: str
    commands: list[list[str]]
    estimate_s: float
    experiment: str | None = None
    result: dict = field(default_factory=dict)


def jobs(seeds: int, trials_per_gpu: str) -> list[Job]:
    """The session's jobs in the order they run."""
    heart = ["--set", "heart_negatives=500"]
    found = [Job("paper-heart", [[*RUN, "--preset", "paper", *heart,
                                  "--experiment", "gpu-paper-heart"]], 180, "gpu-paper-heart")]
    for name, variant in yaml.safe_load(VARIANTS.read_text()).items():
        sets = [arg for key, value in variant["set"].items() for arg in ("--set", f"{key}={value}")]
        found.append(Job(f"variant:{name}", [[*RUN, "--preset", variant["preset"], *sets,
                                              "--runs", str(seeds), "--experiment",
                                              f"gpu-{name}"]],
                         variant["seconds_per_seed"] * seeds, f"gpu-{name}"))
    found.append(Job("ene", [[*RUN, "--preset", "ene", "--runs", str(seeds),
                              "--experiment", "gpu-ene"]], 240 * seeds, "gpu-ene"))
    found.append(Job("ppa-ene-epoch", [[sys.executable, "benchmarks/run.py", "--device", "cuda",
                                        "--workload", "ppa ene"]], 300))
    space = ROOT / "tune_spaces" / "ablation.yaml"
    found.append(Job("ablation-sweep", [[sys.executable, "pipelines/tune.py", "--dataset", "ddi",
                                         "--space", str(space), "--trials-per-gpu",
                                         str(trials_per_gpu), "--experiment", "gpu-ablation"]],
                     600, "gpu-ablation"))
    points = grid_points(space)
    found.append(Job("ablation-runs", [[*RUN, "--preset", "cpu", *point, "--experiment",
                                        "gpu-ablation-runs"] for point in points],
                     90 * len(points), "gpu-ablation-runs"))
    return found


def grid_points(space: Path) -> list[list[str]]:
    """The ``--set`` arguments of each point of a grid search space."""
    searched = yaml.safe_load(space.read_text())["space"]
    choices = {key: spec["choice"] for key, spec in searched.items()}
    return [[arg for key, value in zip(choices, values, strict=True)
             for arg in ("--set", f"{key}={value}")]
            for values in itertools.product(*choices.values())]


def smoke_command(command: list[str]) -> list[str]:
    """``command`` on CPUs, at one step an epoch, with 10 HeaRT negatives
    where it asks for 500 (a small ppa stand-in for the benchmark)."""
    if command[1] == "benchmarks/run.py":
        return [*command[:2], "--device", "cpu", "--quick", *command[4:]]
    tiny = ["--set", "epochs=1", "--set", "max_batches_per_epoch=1", "--set", "eval_every=1",
            *(["--set", "heart_negatives=10"] if "heart_negatives=500" in command else [])]
    if "--trials-per-gpu" in command:
        at = command.index("--trials-per-gpu")
        command = command[:at] + command[at + 2:]
    return [arg for arg in command if arg != "--use-gpu"] + tiny


def run_job(job: Job, deadline: float, out: Path) -> None:
    """Runs ``job``'s commands one after the other until ``deadline``, with
    ``nvidia-smi`` sampling the GPU and each command's output in
    ``out/<job>-<i>.log``; fills ``job.result``."""
    start = time.time()
    samples: list[tuple[float, float]] = []
    returncodes = []
    for i, command in enumerate(job.commands):
        log = out / f"{job.name.replace(':', '-')}-{i}.log"
        with GpuSampler(samples), log.open("w") as output:
            try:
                done = subprocess.run(command, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
                                      timeout=max(1.0, deadline - time.time()))
                returncodes.append(done.returncode)
            except subprocess.TimeoutExpired:
                returncodes.append("stopped at the budget's end")
                break
    job.result = {"wall_s": round(time.time() - start, 1), "returncodes": returncodes,
                  **gpu_summary(samples), "runs": mlflow_runs(job.experiment)}


class GpuSampler:
    """``nvidia-smi``'s GPU use (%) and memory (MiB) every half second, into
    ``samples``, while the block runs."""

    QUERY = ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used",
             "--format=csv,noheader,nounits", "-lms", "500"]

    def __init__(self, samples: list[tuple[float, float]]) -> None:
        self.samples = samples

    def __enter__(self) -> "GpuSampler":
        self.process = (subprocess.Popen(self.QUERY, stdout=subprocess.PIPE, text=True)
                        if shutil.which("nvidia-smi") else None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is None:
            return
        self.process.terminate()
        out, _ = self.process.communicate()
        for line in out.splitlines():
            use, memory = (float(v) for v in line.split(",")[:2])
            self.samples.append((use, memory))


def gpu_summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    """The mean GPU use and the peak memory of ``samples``."""
    if not samples:
        return {}
    return {"gpu_use_mean_pct": round(statistics.fmean(u for u, _ in samples), 1),
            "gpu_memory_peak_mib": max(m for _, m in samples)}


def mlflow_runs(experiment: str | None) -> list[dict]:
    """Each run of ``experiment``: its id, name, seed, status, seconds, and
    its ``final/``, ``best/``, ``timing/`` and ``startup/`` metrics (the
    last, where a run's start-up went on the GPU host, for issue 31)."""
    if experiment is None:
        return []
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return []
    return [{"run_id": run.info.run_id, "name": run.info.run_name,
             "seed": run.data.params.get("seed"), "status": run.info.status,
             "seconds": ((run.info.end_time or run.info.start_time) - run.info.start_time) / 1e3,
             "metrics": {k: v for k, v in run.data.metrics.items()
                         if k.startswith(("final/", "best/", "timing/", "startup/"))}}
            for run in client.search_runs([found.experiment_id])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budget-s", type=float, default=540)
    parser.add_argument("--only", action="append", help="a job's name (repeatable)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials-per-gpu", default="auto", help="the sweep's (default: auto)")
    parser.add_argument("--list", action="store_true", help="print the jobs and stop")
    parser.add_argument("--smoke", action="store_true", help="every job on CPUs, tiny")
    args = parser.parse_args(argv)
    deadline = time.time() + args.budget_s
    chosen = [job for job in jobs(args.seeds, args.trials_per_gpu)
              if not args.only or job.name in args.only]
    if args.smoke:
        for job in chosen:
            job.commands = [smoke_command(command) for command in job.commands]
    if args.list:
        for job in chosen:
            print(f"{job.name:28} ~{job.estimate_s:5.0f} s  {len(job.commands)} command(s)")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{(args.out / 'mlflow.db').resolve()}")
    report = {"budget_s": args.budget_s, "bytecode": bytecode_figures(python_path_sites()),
              "jobs": []}
    for job in chosen:
        if job.estimate_s > deadline - time.time():
            report["jobs"].append({"name": job.name, "skipped": "its estimate exceeds the budget"})
            continue
        print(f"== {job.name}", flush=True)
        run_job(job, deadline, args.out)
        report["jobs"].append({"name": job.name, "commands": job.commands, **job.result})
        (args.out / "gpu_runs.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "gpu_runs.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
