"""The benchmark: how fast PLNLP trains, evaluates, walks and writes, and
what the Ray pipeline adds, in one command.

    python benchmarks/run.py [--quick] [--device cpu|cuda] [--json FILE]

For each workload (ogbl-ddi's ``smoke``, ``cpu`` and ``paper`` presets on the
real ddi; collab's ``paper`` preset with random walks and ppa's ``paper``
preset on stand-ins in OGB's layout, at their real sizes, or small ones with
``--quick``; the edge level, ``encoder_level: edge``, as ddi's ``cpu``
preset at the edge level and ppa's ``ene`` preset; see :mod:`workloads`) it
builds what :func:`plnlp_core.training.fitting.fit` builds and times full-size
batches of its step, extrapolated to an epoch (:mod:`training_speed`):

- seconds per epoch, ranked pairs (positive x negative) and positives per
  second, and evaluation pairs scored per second;
- the step's GFLOP/s, counted from the shapes (forward plus twice it for the
  backward), beside the peak of a dense matrix product at the predictor's
  shape measured in the same process, and their ratio;
- the same step done naively, every negative scored as often as it is
  ranked, as a plain implementation does, and our speed over it;
- peak memory: the resident set size (and on CUDA the allocator's peak).

Then the classic heuristics' seconds and memory on the ppa stand-in,
random-walk steps per second and Parquet write and read MB/s, and,
where Ray and MLflow are installed, the pipeline's overhead on short
epochs (:mod:`pipeline_overhead`): the median wall time between epochs
through ``pipelines/run.py`` over ``fit``'s in this process (goal: at most
1.10), and the seconds from the command to the first epoch, phase by phase
(see :mod:`components.train.startup`), and, without ``--quick``, what a
sweep's trial costs beyond its training (:mod:`trial_overhead`). Last, the seconds each command
takes to answer ``--help`` or refuse bad input, and whether it imported
torch, PyG, Ray or MLflow first (:mod:`command_latency`; three command lines
with ``--quick``). Only torch, torch-geometric, ogb and pyarrow are needed
for the rest, so it runs on a GPU machine without Ray or MLflow.
"""
import argparse
import gc
import json
import sys
from pathlib import Path

import torch
from command_latency import latency_table, time_commands
from heuristic_speed import time_heuristics
from pipeline_overhead import time_pipeline
from tables import report_text
from timing import device_name
from training_speed import prepare, time_training
from trial_overhead import costs_table, trial_costs
from walks_and_parquet import time_walks_and_parquet
from workloads import load_split, workloads

from plnlp_core.errors import PLNLPError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small stand-ins and few batches: a minute, for CI")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        choices=("cpu", "cuda"), help="default: cuda if available")
    parser.add_argument("--data-root", help="folder holding ogbl_ddi "
                                            "(default: $PLNLP_DATA_ROOT, else ./data)")
    parser.add_argument("--skip-pipeline", action="store_true",
                        help="leave out the Ray pipeline's overhead")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the phases of a step: sampling, encoder and predictor "
                             "forward and backward, optimiser")
    parser.add_argument("--workload", action="append",
                        help="time only the training workloads whose name contains this text "
                             "(repeatable, e.g. --workload 'edge level'); leaves out the "
                             "heuristics, walks and pipeline parts")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    return args


def main(argv: list[str] | None = None) -> int:
    """Times every workload, then the heuristics, walks and pipeline; prints the report."""
    args = parse_args(argv)
    device = torch.device(args.device)
    report: dict = {"device": f"{device.type} ({device_name(device)})", "torch": torch.__version__,
                    "threads": torch.get_num_threads(), "quick": args.quick, "training": []}
    print(f"device   {report['device']}, torch {report['torch']}, {report['threads']} threads")
    chosen = [w for w in workloads(args.quick)
              if not args.workload or any(text in w.name for text in args.workload)]
    try:
        for workload in chosen:
            split = load_split(workload.dataset, workload.source, args.data_root)
            bench = prepare(workload, split, device)
            report["training"].append(time_training(bench, workload.name, workload.batches,
                                                    args.breakdown))
            print(f"  done {workload.name}", file=sys.stderr, flush=True)
            del bench
            gc.collect()
        if not args.workload:
            ddi = load_split("ddi", "real", args.data_root)
            ppa = next(w.source for w in chosen if w.dataset == "ppa")
            report["heuristics"] = time_heuristics(load_split("ppa", ppa, args.data_root),
                                                   f"ppa stand-in ({ppa})")
            report["walks"] = time_walks_and_parquet(ddi, args.quick)
            report["pipeline"] = None if args.skip_pipeline else time_pipeline(
                args.data_root, ddi, start_runs=1 if args.quick else 2)
            if report["pipeline"] is not None and not args.quick:
                report["trials"] = trial_costs(args.data_root, trials=5, epochs=4)
            report["commands"] = time_commands(args.quick)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report_text(report))
    if "trials" in report:
        print("\n" + costs_table(report["trials"]))
    if "commands" in report:
        print("\n" + latency_table(report["commands"]))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
