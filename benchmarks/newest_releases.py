"""Whether the project runs on the newest torch and MLflow served, and how
fast: builds an empty virtual environment (no system site packages), lets
pip install the newest torch and MLflow its index serves, installs the
project into it (pip keeps them when ``pyproject.toml``'s ranges allow, and
says so when they do not), then times ``python pipelines/run.py --dataset
ddi --preset smoke`` there twice, with an empty stage cache and then with
the load stage's entry kept, each in a tracking store of its own. Prints the
CPU, the versions and the seconds.

    PLNLP_DATA_ROOT=/work/shared/datasets python benchmarks/newest_releases.py \\
        [--venv DIR] [--reuse] [--pip-config FILE] [--beyond-ranges] [--remove]

PyPI's torch is a CUDA build of several GB (its CUDA libraries are wheels of
their own); a machine whose pip configuration caps torch (these machines'
``/etc/xdg/pip``) gives the venv's pip ``--pip-config /dev/null`` (the
default here), which reads none. ``--beyond-ranges`` then upgrades torch and
MLflow past the project's ranges, to try a release before lifting a cap.
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tables import format_rows

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("torch", "mlflow", "ray", "torch_geometric")
VERSIONS = ("import json, sys, torch, mlflow, ray, torch_geometric; print(json.dumps({"
            "'python': sys.version.split()[0], 'torch': torch.__version__, "
            "'mlflow': mlflow.__version__, 'ray': ray.__version__, "
            "'torch_geometric': torch_geometric.__version__, "
            "'torch_threads': torch.get_num_threads(), 'cuda': torch.version.cuda}))")


def cpu_name() -> str:
    """The CPU's model name and this machine's logical CPUs."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} logical CPUs"


def timed(command: list[str], env: dict[str, str], cwd: Path | None = None,
          quiet: bool = False) -> float:
    """Runs ``command``, raising when it fails; returns its seconds."""
    print("$", " ".join(command), flush=True)
    start = time.perf_counter()
    output = subprocess.DEVNULL if quiet else None
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=output)
    return time.perf_counter() - start


def build(venv: Path, pip_env: dict[str, str], beyond_ranges: bool) -> dict[str, float]:
    """The venv with the newest torch and MLflow, then the project; the
    seconds of each step."""
    seconds = {"venv": timed([sys.executable, "-m", "venv", "--clear", str(venv)], pip_env)}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    seconds["torch_mlflow"] = timed([*pip, "torch", "mlflow"], pip_env)
    seconds["project"] = timed([*pip, "-e", str(REPO)], pip_env)
    if beyond_ranges:
        seconds["beyond_ranges"] = timed([*pip, "--upgrade", "torch", "mlflow"], pip_env)
    return seconds


def newest_served(venv: Path, pip_env: dict[str, str], name: str) -> str | None:
    """The newest release of ``name`` the venv's pip is served."""
    found = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "index", "versions",
                            name], env=pip_env, capture_output=True, text=True)
    for line in found.stdout.splitlines():
        if line.startswith(f"{name} ("):
            return line.split("(", 1)[1].rstrip(")")
    return None


def smoke(venv: Path, data_root: str, cache: Path, work: Path) -> float:
    """Seconds of the README's smoke command in ``venv``, in a tracking
    store of its own under ``work``."""
    work.mkdir(parents=True)
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTHONPATH", "MLFLOW_TRACKING_URI")}
    env.update(PLNLP_DATA_ROOT=data_root, PLNLP_CACHE_DIR=str(cache),
               MLFLOW_TRACKING_URI=f"sqlite:///{work / 'mlflow.db'}",
               PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return timed([str(venv / "bin" / "python"), str(REPO / "pipelines" / "run.py"),
                  "--dataset", "ddi", "--preset", "smoke"], env, cwd=work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir())
                        / "plnlp-newest-releases", help="where the venv is built")
    parser.add_argument("--reuse", action="store_true",
                        help="time the venv already at --venv instead of building it")
    parser.add_argument("--pip-config", default=os.devnull,
                        help="PIP_CONFIG_FILE for the venv's pip (default: none read)")
    parser.add_argument("--beyond-ranges", action="store_true",
                        help="upgrade torch and MLflow past pyproject.toml's ranges")
    parser.add_argument("--remove", action="store_true", help="remove the venv at the end")
    args = parser.parse_args(argv)
    data_root = os.environ.get("PLNLP_DATA_ROOT")
    if not data_root or not (Path(data_root) / "ogbl_ddi").is_dir():
        parser.error("set PLNLP_DATA_ROOT to the folder holding ogbl_ddi")
    pip_env = {key: value for key, value in os.environ.items()
               if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PIP_CONSTRAINT")}
    pip_env["PIP_CONFIG_FILE"] = args.pip_config
    install = {} if args.reuse else build(args.venv, pip_env, args.beyond_ranges)
    versions = json.loads(subprocess.run([str(args.venv / "bin" / "python"), "-c", VERSIONS],
                                         capture_output=True, text=True, check=True).stdout)
    served = {name: newest_served(args.venv, pip_env, name) for name in ("torch", "mlflow")}
    with tempfile.TemporaryDirectory(prefix="plnlp-newest-") as scratch:
        cold = smoke(args.venv, data_root, Path(scratch) / "cache", Path(scratch) / "cold")
        warm = smoke(args.venv, data_root, Path(scratch) / "cache", Path(scratch) / "warm")
    if args.remove:
        shutil.rmtree(args.venv)
    print(f"\nCPU: {cpu_name()}; torch {versions['torch']} (CUDA {versions['cuda']}, "
          f"{versions['torch_threads']} threads), MLflow {versions['mlflow']}, "
          f"Ray {versions['ray']}, PyG {versions['torch_geometric']}, "
          f"Python {versions['python']}")
    for name, newest in served.items():
        if newest and versions[name].split("+")[0] != newest:
            print(f"{name} {newest} is served but pip installed {versions[name]}: "
                  "pyproject.toml's range excludes it (--beyond-ranges tries it), or a "
                  f"requirement of {name} {newest} is not served (pip install {name}=={newest} "
                  "says which)")
    rows = [[f"install: {step}", f"{seconds:.1f}"] for step, seconds in install.items()]
    rows += [["smoke, empty stage cache", f"{cold:.1f}"], ["smoke, load entry kept", f"{warm:.1f}"]]
    print(format_rows(["step", "seconds"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
