"""The prepared GPU session (benchmarks/gpu_runs.py): every pipeline command
it would run is a valid plan, so GPU time is not lost to a typo, and its
CPU smoke keeps the jobs but not the GPU."""
import importlib.util
from pathlib import Path

from pipelines.planning.arguments import run_request, sweep_request
from pipelines.planning.run_plan import plan_run

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_runs.py"


def gpu_runs():
    spec = importlib.util.spec_from_file_location("gpu_runs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_run_of_the_gpu_session_plans_and_every_variant_is_its_own_job():
    module = gpu_runs()
    jobs = module.jobs(seeds=3, trials_per_gpu="auto")
    names = [job.name for job in jobs]
    assert names[0] == "paper-heart" and {"ene", "ppa-ene-epoch", "ablation-sweep"} <= set(names)
    assert len(names) == len(set(names)) and any(n.startswith("variant:") for n in names)
    runs = [command for job in jobs for command in job.commands
            if command[1] == "pipelines/run.py"]
    for command in runs:
        assert "--use-gpu" in command
        plan_run(run_request(command[2:]))  # refuses a bad setting or preset
    sweep = next(job for job in jobs if job.name == "ablation-sweep").commands[0]
    assert sweep_request(sweep[2:]).trials_per_gpu == "auto"


def test_the_smoke_runs_the_same_jobs_on_cpus_at_one_step_an_epoch():
    module = gpu_runs()
    for job in module.jobs(seeds=1, trials_per_gpu="4"):
        for command in job.commands:
            smoke = module.smoke_command(command)
            assert "--use-gpu" not in smoke and "--trials-per-gpu" not in smoke
            assert ("cuda" in command) == ("--quick" in smoke)
            if "heart_negatives=500" in command:
                assert smoke[-1] == "heart_negatives=10"
