"""Every command answers ``--help``, and ``pipelines/run.py`` refuses an
unknown dataset, before importing torch, PyG, Ray or MLflow: each is run in
a fresh interpreter, which then says which of them it imported (no timing
here; ``benchmarks/command_latency.py`` measures the seconds). An unknown
part's name, and an import path spelled wrong, are refused so too; a part of
one's own is imported (and torch with it) only once its path is well spelled."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

HEAVY = ("torch", "torch_geometric", "ray", "mlflow")

CHECK = textwrap.dedent("""
    import importlib, sys
    main = importlib.import_module(sys.argv[1]).main
    try:
        main(sys.argv[2:])
    except SystemExit:
        pass
    print("imported:", *[name for name in {heavy!r} if name in sys.modules])
""").format(heavy=HEAVY)


def imported_by(module: str, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
    """The packages of :data:`HEAVY` in ``sys.modules`` after ``module``'s
    ``main(argv)`` returns or exits, in a fresh interpreter (with ``env``
    added to its environment)."""
    run = subprocess.run([sys.executable, "-c", CHECK, module, *argv], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    last = run.stdout.strip().splitlines()[-1]
    assert last.startswith("imported:"), run.stdout + run.stderr
    return last.split()[1:]


@pytest.mark.parametrize("module", ["pipelines.run", "pipelines.tune", "pipelines.predict",
                                    "pipelines.register", "pipelines.standin",
                                    "pipelines.kubeflow"])
def test_help_imports_no_heavy_package(module):
    assert imported_by(module, ["--help"]) == []


@pytest.mark.parametrize("argv", [["--dataset", "nope"],
                                  ["--dataset", "ddi", "--preset", "nope"],
                                  ["--dataset", "ddi", "--set", "nope=1"],
                                  ["--dataset", "ddi", "--set", "lr=abc"],
                                  ["--dataset", "ddi", "--set", "encoder=gin"],
                                  ["--dataset", "ddi", "--set", "encoder=my parts:GIN"],
                                  ["--dataset", "ddi", "--set", "encoder_options.eps=0.1"]])
def test_run_refuses_bad_input_before_importing_heavy_packages(argv):
    assert imported_by("pipelines.run", argv) == []
