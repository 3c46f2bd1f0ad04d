"""Seconds, peak memory and rows per second of each pipeline stage (load,
augment, train, evaluate), through the same Ray stages ``pipelines/run.py``
runs, on a real dataset or a stand-in of any size in OGB's layout.

    python benchmarks/bench_stages.py --dataset ppa --size real --batches 10

Memory is the peak of the proportional set size (PSS) summed over this
process and every process it started (Ray's GCS, raylet, object store and
workers): what the whole pipeline holds at once, shared pages counted once.
Training runs ``--batches`` batches of one epoch and extrapolates the
epoch; its seconds include Ray Train's worker start and one evaluation.
``augment`` walks ``--walk-length`` steps from every node (the preset's
own walks when it has them); the walks are timed, not trained on.
"""
import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import ray
from tables import format_rows
from timing import timed

from components.augment import augment
from components.evaluate import evaluate_and_export
from components.load import load_dataset
from components.storage.location import Location
from components.storage.parquet_io import PAIR_TABLES
from components.train.stage import train
from components.train.startup import startup_phases
from components.train.worker_group import WorkerGroup
from pipelines.planning.presets import load_preset
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS, cache_dir, resolve_data_root
from plnlp_core.data.standins import cached_standin
from plnlp_core.errors import PLNLPError

GIB = 2**30


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="ppa", help=", ".join(DATASETS.names))
    parser.add_argument("--preset", default="paper", help="pipelines/presets/<dataset>.yaml")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--size", default="real",
                        help="stand-in size (plnlp_core.data.standins): tiny or real (default)")
    source.add_argument("--data-root", help="a folder holding the real dataset instead")
    parser.add_argument("--batches", type=int, default=10,
                        help="training batches timed, then extrapolated to the epoch")
    parser.add_argument("--walk-length", type=int, default=3,
                        help="walk length of the augment stage when the preset has none")
    parser.add_argument("--cpus", type=int, default=psutil.cpu_count(),
                        help="CPUs of the local Ray, all given to the one training worker")
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    return parser.parse_args(argv)


class MemoryPeaks:
    """Samples the PSS of this process tree in a thread and keeps the peak
    of the stage being timed."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.stage = "start"
        self.peaks: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(self.interval):
            total = 0
            for process in [me, *me.children(recursive=True)]:
                try:
                    total += process.memory_full_info().pss
                except psutil.Error:  # ended between listing and reading
                    pass
            self.peaks[self.stage] = max(self.peaks.get(self.stage, 0), total)

    def stop(self) -> None:
        """Ends the sampling."""
        self._stop.set()
        self._thread.join()


def measure(peaks: MemoryPeaks, stage: str, fn: Callable[[], object]) -> tuple[float, object]:
    """Seconds ``fn`` takes, its peak memory recorded under ``stage``."""
    peaks.stage = stage
    seconds, result = timed(fn)
    time.sleep(2 * peaks.interval)  # one more sample of the stage's end
    return seconds, result


def parquet_rows(directory: Path, names: tuple[str, ...]) -> int:
    """The rows of the Parquet tables ``names`` in ``directory``, read from their footers."""
    return sum(pq.ParquetFile(directory / f"{name}.parquet").metadata.num_rows for name in names)


def run_stages(args: argparse.Namespace, data_root: Path, work: Path) -> list[dict]:
    """Runs load, augment, train and evaluate+export in ``work``; one row of figures each."""
    config = PLNLPConfig.from_mapping({**load_preset(args.dataset, args.preset),
                                       "dataset": args.dataset})
    config.validate()
    peaks = MemoryPeaks()
    rows = []

    def record(stage: str, seconds: float, count: int, unit: str, **extra: object) -> None:
        rows.append({"stage": stage, "seconds": seconds, "peak_gib": peaks.peaks[stage] / GIB,
                     "rows": count, "unit": unit, "rows_per_s": count / seconds, **extra})
        print(f"  done {stage}: {seconds:.1f} s", file=sys.stderr, flush=True)

    seconds, dataset = measure(peaks, "load", lambda: ray.get(load_dataset.remote(
        args.dataset, Location(data_root), Location(work / "splits"))))
    split_dir = dataset.directory.local_path()
    record("load", seconds, parquet_rows(split_dir, ("train", *PAIR_TABLES)), "pairs written")

    walking = config if config.uses_random_walk else config.replace(
        walk_length=args.walk_length, walk_starts="all")
    seconds, walks = measure(peaks, "augment", lambda: augment(dataset, walking,
                                                               Location(work / "walks")))
    steps = walks.num_pairs  # one pair per step that left its start
    record("augment", seconds, steps, "walk pairs", walk_length=walking.walk_length)

    trained_config = config.replace(epochs=1, eval_every=1, max_batches_per_epoch=args.batches)
    workers = WorkerGroup(1, args.cpus, False)
    called = time.time()
    seconds, trained = measure(peaks, "train", lambda: train(
        dataset, walks if config.uses_random_walk else None, trained_config, Location(work),
        workers))
    epoch_batches = -(-dataset.meta.num_train_edges // config.batch_size)
    batches = min(args.batches, epoch_batches)
    batch_seconds = trained.history[0]["epoch_seconds"]
    record("train", seconds, batches * config.batch_size, "positives ranked",
           batches=batches, batch_s=batch_seconds / batches,
           epoch_s_extrapolated=batch_seconds / batches * epoch_batches,
           before_first_batch=startup_phases({"augment": called, **trained.startup}))
    rows[-1]["rows_per_s"] = batches * config.batch_size / batch_seconds

    seconds, _ = measure(peaks, "evaluate", lambda: ray.get(evaluate_and_export.remote(
        dataset, trained, config, Location(work / "evaluated"))))
    record("evaluate+export", seconds, parquet_rows(split_dir, PAIR_TABLES), "pairs scored")
    peaks.stop()
    return rows


def format_table(rows: list[dict]) -> str:
    """One line a stage: seconds, peak memory, rows and rows per second."""
    return format_rows(["stage", "seconds", "peak GiB", "rows", "rows/s", "rows are"], [
        [row["stage"], f"{row['seconds']:.1f}", f"{row['peak_gib']:.2f}", f"{row['rows']:,}",
         f"{row['rows_per_s']:,.0f}", row["unit"]] for row in rows], left=(0, 5))


def main(argv: list[str] | None = None) -> int:
    """Runs the stages on a local Ray and prints their table."""
    args = parse_args(argv)
    try:
        DATASETS.get(args.dataset)
        prepare_s, data_root = timed(lambda: resolve_data_root(args.data_root) if args.data_root
                                     else cached_standin(args.dataset, args.size))
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"dataset  {args.dataset} ({args.data_root or f'{args.size} stand-in'}) at "
          f"{data_root}, ready in {prepare_s:.1f} s")
    print(f"machine  {psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / GIB:.1f} GiB; "
          f"Ray with {args.cpus} CPUs")
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    cache_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="bench-stages-") as work:
        rows = run_stages(args, data_root, Path(work))
    ray.shutdown()
    print(format_table(rows))
    train_row = next(row for row in rows if row["stage"] == "train")
    print(f"train: {train_row['batch_s']:.2f} s a batch over {train_row['batches']} batches; "
          f"a full epoch would take {train_row['epoch_s_extrapolated'] / 60:.1f} min")
    seconds = {phase: train_row["before_first_batch"][f"startup_{phase}_s"]
               for phase in ("workers", "read_split", "experiment", "model")}
    print(f"train stage before its first batch: {sum(seconds.values()):.1f} s ("
          + ", ".join(f"{phase} {value:.1f}" for phase, value in seconds.items()) + ")")
    if args.json is not None:
        args.json.write_text(json.dumps({"dataset": args.dataset, "stages": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
