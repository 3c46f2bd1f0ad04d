"""What importing from source costs every Python process Ray starts, and
what compiling the packages once saves:

    python benchmarks/import_bytecode.py [--site DIR ...] [--modules ray.train.torch,mlflow,...]

A package unpacked from its wheel (as the GPU bundle's ``unpack.sh`` does)
has no ``.pyc`` files, and where ``PYTHONDONTWRITEBYTECODE`` is set none
are written, so every process (the driver, Train's controller and its
helper actors, each worker) compiles Ray, MLflow and OGB again before its
first line. This times ``--modules``' import in a new interpreter, compiles
every ``--site`` (default: what ``PYTHONPATH`` holds besides the project)
with ``compileall``, and times the import again.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = "ray.train.torch,mlflow,ogb.linkproppred"


def python_path_sites() -> list[Path]:
    """The folders of ``PYTHONPATH`` other than the project's root."""
    entries = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return [Path(entry) for entry in entries
            if entry and Path(entry).is_dir() and Path(entry).resolve() != ROOT]


def import_seconds(modules: str) -> float:
    """Wall seconds of a new interpreter that imports ``modules`` (comma-separated)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {modules}"], check=True, cwd=ROOT)
    return time.perf_counter() - start


def compile_seconds(sites: list[Path]) -> float:
    """Wall seconds to compile every module of ``sites`` to bytecode, on every core."""
    start = time.perf_counter()
    if sites:
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j0", *map(str, sites)],
                       check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def bytecode_figures(sites: list[Path], modules: str = MODULES) -> dict[str, object]:
    """The import's seconds before and after compiling ``sites``, and the compile's."""
    before = import_seconds(modules)
    compiled = compile_seconds(sites)
    return {"sites": [str(site) for site in sites], "modules": modules,
            "dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
            "import_before_s": round(before, 2), "compile_s": round(compiled, 2),
            "import_after_s": round(import_seconds(modules), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, action="append",
                        help="a folder of packages to compile (default: PYTHONPATH's)")
    parser.add_argument("--modules", default=MODULES)
    args = parser.parse_args(argv)
    figures = bytecode_figures(args.site or python_path_sites(), args.modules)
    print(f"importing {figures['modules']}: {figures['import_before_s']} s before, "
          f"{figures['import_after_s']} s after compiling {len(figures['sites'])} folder(s) "
          f"in {figures['compile_s']} s (PYTHONDONTWRITEBYTECODE "
          f"{'set' if figures['dont_write_bytecode'] else 'unset'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
