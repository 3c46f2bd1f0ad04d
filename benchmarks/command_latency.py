"""How fast the commands answer ``--help`` and refuse bad input: each
command line of :data:`COMMANDS` run as a subprocess ``repeats`` times (the
median seconds, from start to exit), then once more under ``python -X
importtime`` to see which of :data:`HEAVY` it imported (none should be: the
commands refuse before importing torch, PyG, Ray or MLflow, except once a
part of one's own is named by a well-spelled import path, which is imported
and tried on a tiny graph). Then the seconds of that check alone
(:func:`plnlp_core.preflight.probe.check_parts`), in this process once its
imports are done, for the four parts of ``examples/link_parts``.

    python benchmarks/command_latency.py [--quick] [--repeats 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tables import format_rows

REPO = Path(__file__).resolve().parents[1]

HEAVY = ("torch", "torch_geometric", "ray", "mlflow")
"""The packages a command should not import before refusing bad input."""

COMMANDS = (
    ("run.py", "--help"),
    ("run.py", "--dataset", "nope"),
    ("tune.py", "--help"),
    ("run.py", "--dataset", "ddi", "--preset", "nope"),
    ("run.py", "--dataset", "ddi", "--set", "nope=1"),
    ("run.py", "--dataset", "ddi", "--set", "lr=abc"),
    ("tune.py", "--dataset", "nope", "--space", "tune_spaces/ddi.yaml"),
    ("predict.py", "--help"),
    ("register.py", "--help"),
    ("standin.py", "--help"),
    ("kubeflow.py", "--help"),
    ("run.py", "--dataset", "ddi", "--set", "encoder=gin"),
    ("run.py", "--dataset", "ddi", "--set", "encoder=my parts:GIN"),
    ("run.py", "--dataset", "ddi", "--set", "encoder_options.eps=0.1"),
    ("run.py", "--dataset", "ddi", "--set", "encoder=examples.link_parts.layers:GINEncoder"),
    ("run.py", "--dataset", "ddi", "--set", "encoder=examples.link_parts.layers:GINLayer",
     "--set", "encoder_options.heads=4"),
    # the four parts checked on the tiny graph, then the paper preset refused on CPUs
    ("run.py", "--dataset", "ddi", "--config", "examples/link_parts/parts.yaml"),
)
"""Each command line: a script of ``pipelines/`` and its arguments; the
first :data:`QUICK` of them make ``--quick``."""

QUICK = 3


def time_commands(quick: bool = False, repeats: int = 3) -> list[dict]:
    """One row a command line: its median seconds over ``repeats`` runs,
    its exit code and the packages of :data:`HEAVY` it imported."""
    rows = []
    for script, *args in COMMANDS[:QUICK] if quick else COMMANDS:
        argv = [sys.executable, str(REPO / "pipelines" / script), *args]
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            code = subprocess.run(argv, cwd=REPO, capture_output=True).returncode
            seconds.append(time.perf_counter() - start)
        rows.append({"command": " ".join([script, *args]), "median_s": statistics.median(seconds),
                     "exit_code": code, "heavy_imports": heavy_imports(argv)})
    return rows


def heavy_imports(argv: list[str]) -> list[str]:
    """The packages of :data:`HEAVY` that the command ``argv`` imports,
    read from ``python -X importtime``'s lines."""
    run = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=REPO,
                         capture_output=True, text=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    return [name for name in HEAVY if name in imported]


def latency_table(rows: list[dict]) -> str:
    """The rows of :func:`time_commands` as a table."""
    return "commands: --help and refused input, median of runs as subprocesses\n" + format_rows(
        ["command", "median s", "exit", "imported of " + ", ".join(HEAVY)],
        [[r["command"], f"{r['median_s']:.2f}", str(r["exit_code"]),
          ", ".join(r["heavy_imports"]) or "none"] for r in rows])


def part_check_seconds(repeats: int = 3) -> float:
    """The median seconds of checking the four parts of
    ``examples/link_parts`` on a tiny graph (ddi's ``paper`` sizes), in this
    process once torch, PyG and the parts are imported (a first check). Run
    from the repository's root, as a user runs a command from the folder
    that holds their package of parts (``examples/``), whatever folder the
    benchmark was started in."""
    import yaml

    from pipelines.planning.presets import load_preset
    from plnlp_core.config import PLNLPConfig
    from plnlp_core.data.datasets import DATASETS
    from plnlp_core.preflight.probe import check_parts

    parts = yaml.safe_load((REPO / "examples" / "link_parts" / "parts.yaml").read_text())
    started_in = os.getcwd()
    os.chdir(REPO)
    try:
        config = PLNLPConfig.from_mapping({**load_preset("ddi", "paper"), **parts})
        check_parts(config, DATASETS.get("ddi"))  # the imports
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            check_parts(config, DATASETS.get("ddi"))
            seconds.append(time.perf_counter() - start)
    finally:
        os.chdir(started_in)
    return statistics.median(seconds)


def main(argv: list[str] | None = None) -> int:
    """Times the command lines and the check of parts of one's own; prints both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"only the first {QUICK} command lines, for CI")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (default: 3)")
    args = parser.parse_args(argv)
    print(latency_table(time_commands(args.quick, args.repeats)))
    print(f"checking the four parts of examples/link_parts on a tiny graph, after the imports: "
          f"{part_check_seconds(args.repeats):.3f} s (median of {args.repeats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
