"""How fast this machine runs the suite's kind of work now, to read a
suite's time against:

    python benchmarks/machine_pace.py [--tries 3]

A shared VM's pace moves from day to day and within one: on 2026-12-06 an
Intel Xeon VM (2 vCPUs) took 2.2 to 2.9 CPU-seconds for the import below,
where it took 1.72 to 1.75 the day before, and the suite's time moved with
it. Most of the suite's CPU goes to Python starting processes (each imports
torch, PyG, Ray or MLflow) and to small torch steps, so this times both,
each in a fresh interpreter on one thread, and prints the median of
``--tries`` CPU-seconds:

- ``import``: ``import plnlp_core, torch, torch_geometric``;
- ``matmul``: 200 products of two 512 x 512 fp32 matrices.

Run it just before and after a suite whose time is to be compared with
another day's.
"""
import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# each prints the CPU-seconds of its work, its interpreter's start left out
WORKLOADS = {
    "import": "import time\n"
              "started = time.process_time()\n"
              "import plnlp_core, torch, torch_geometric\n"
              "print(time.process_time() - started)\n",
    "matmul": "import time, torch\n"
              "torch.set_num_threads(1)\n"
              "a = torch.randn(512, 512)\n"
              "started = time.process_time()\n"
              "for _ in range(200):\n"
              "    a @ a\n"
              "print(time.process_time() - started)\n",
}


def cpu_seconds(code: str) -> float:
    """The CPU-seconds ``code`` prints, run in a fresh interpreter at the root."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=3, help="runs of each (default 3)")
    args = parser.parse_args(argv)
    if args.tries < 1:
        parser.error(f"--tries must be at least 1, not {args.tries}")
    for name, code in WORKLOADS.items():
        figures = [cpu_seconds(code) for _ in range(args.tries)]
        print(f"{name:<7} {statistics.median(figures):.2f} CPU-s (median of {args.tries}: "
              f"{', '.join(f'{figure:.2f}' for figure in figures)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
