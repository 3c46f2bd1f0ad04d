"""The prepared GPU session (benchmarks/gpu_runs.py): every pipeline command
it would run is a valid plan, so GPU time is not lost to a typo, and its
CPU smoke keeps the jobs but not the GPU; the bytecode check before the
jobs compiles what PYTHONPATH adds."""
import importlib.util
import sys
from pathlib import Path

import pytest

from pipelines.planning.arguments import run_request, sweep_request
from pipelines.planning.run_plan import plan_run

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(autouse=True)
def benchmarks_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # as running a script there makes it


def gpu_runs():
    spec = importlib.util.spec_from_file_location("gpu_runs", BENCHMARKS / "gpu_runs.py")
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


def test_the_bytecode_check_compiles_python_path_s_packages_but_not_the_project(
        tmp_path, monkeypatch):
    import import_bytecode

    site = tmp_path / "site"
    (site / "unpacked").mkdir(parents=True)
    (site / "unpacked" / "__init__.py").write_text("VALUE = 1\n")
    project = BENCHMARKS.parent
    monkeypatch.setenv("PYTHONPATH", f"{site}:{project}:{tmp_path / 'missing'}")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # only compileall may write bytecode
    assert import_bytecode.python_path_sites() == [site]
    figures = import_bytecode.bytecode_figures([site], "unpacked")
    cache = site / "unpacked" / "__pycache__"
    assert list(cache.glob(f"__init__.{sys.implementation.cache_tag}*.pyc"))
    assert figures["sites"] == [str(site)] and figures["dont_write_bytecode"]
    assert figures["import_before_s"] > 0 and figures["import_after_s"] > 0
