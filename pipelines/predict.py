"""Use a trained model: score pairs, or recommend each node's best new links.

    python pipelines/predict.py --model runs:/<run id>/model --pairs pairs.csv --out scored.csv
    python pipelines/predict.py --model models:/ddi-links@champion --top-k 20 --out top20.parquet

``--pairs`` reads ``src`` and ``dst`` (CSV or Parquet, the user's node ids)
and writes them with a ``score`` column; ``--top-k`` writes, for each node
(or those ``--for`` names), its K highest-scored pairs that are no edge of
the graph: ``src``, ``dst``, ``score``, ``rank``. Scores are the model's, as
its run's evaluation computed them and as ``mlflow models serve`` answers.
Output is written whole or not at all.
"""
import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from pipelines.runtime.process_exit import skip_final_collection
from plnlp_core.data.publishing import written_file
from plnlp_core.errors import PLNLPError

FORMATS = (".csv", ".parquet")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pipelines/predict.py",
                                     description="Score node pairs or recommend links with a "
                                                 "trained PLNLP model from MLflow.")
    parser.add_argument("--model", required=True,
                        help="runs:/<run id>/model, models:/<name>@<alias> or "
                             "models:/<name>/<version>")
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--pairs", type=Path, help="a .csv or .parquet file with src, dst columns")
    task.add_argument("--top-k", type=int, metavar="K",
                      help="each node's K highest-scored non-edges")
    parser.add_argument("--for", dest="nodes", metavar="FILE|IDS",
                        help="with --top-k: the nodes to recommend for, as a .csv/.parquet file "
                             "(its id column, else its first) or comma-separated ids "
                             "(default: every node)")
    parser.add_argument("--out", type=Path, required=True, help="a .csv or .parquet file")
    return parser.parse_args(argv)


def check_args(args: argparse.Namespace) -> pa.Table | None:
    """Refuses what cannot work before the model loads; returns the pairs."""
    if args.out.suffix not in FORMATS:
        raise PLNLPError(f"--out {args.out} must be a .csv or .parquet file.")
    if not args.out.parent.is_dir():
        raise PLNLPError(f"--out {args.out}: its folder {args.out.parent} does not exist; "
                         "create it first, or give another path.")
    if args.nodes is not None and args.top_k is None:
        raise PLNLPError("--for names the nodes of --top-k; add --top-k K.")
    if args.top_k is not None and args.top_k < 1:
        raise PLNLPError(f"--top-k must be at least 1; got {args.top_k}.")
    if args.pairs is None:
        return None
    pairs = read_table(args.pairs, "--pairs")
    missing = [name for name in ("src", "dst") if name not in pairs.column_names]
    if missing:
        raise PLNLPError(f"--pairs {args.pairs} has no {' or '.join(missing)} column (it has: "
                         f"{', '.join(pairs.column_names) or 'none'}); name the pair's ends "
                         "src and dst.")
    return pairs


def read_table(path: Path, flag: str) -> pa.Table:
    """A CSV or Parquet file, refused in one sentence when it cannot be read."""
    if path.suffix not in FORMATS:
        raise PLNLPError(f"{flag} {path} must be a .csv or .parquet file.")
    if not path.is_file():
        raise PLNLPError(f"{flag} {path} does not exist.")
    try:
        return pq.read_table(path) if path.suffix == ".parquet" else pcsv.read_csv(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise PLNLPError(f"{flag} {path} cannot be read ({str(error).splitlines()[0]}); "
                         "give a CSV with a header row or a Parquet file.") from None


def score_pairs(scorer: object, pairs: pa.Table, out: Path) -> str:
    """Writes ``pairs`` with their scores to ``out``; returns the summary."""
    start = time.perf_counter()
    positions = scorer.pairs_of(pairs.column("src"), pairs.column("dst"))
    scores = scorer.score(positions)
    with written_file(out) as scratch:
        write_table(pairs.append_column("score", pa.array(scores.double().numpy())), scratch)
    seconds = time.perf_counter() - start
    return (f"scored {len(pairs):,} pairs in {seconds:.2f} s "
            f"({len(pairs) / max(seconds, 1e-9):,.0f} pairs/s) into {out}")


def recommend(scorer: object, k: int, nodes: str | None, out: Path) -> str:
    """Writes the top-``k`` non-edges of ``nodes`` (all by default) to
    ``out``, chunk by chunk; returns the summary."""
    import torch

    sources = torch.arange(scorer.num_nodes) if nodes is None else \
        scorer.node_ids.positions(node_list(nodes), "--for node id")
    start, rows = time.perf_counter(), 0
    progress = Progress(sources.numel(), "nodes")
    with written_file(out) as scratch, table_writer(scratch) as write:
        for found in scorer.recommend(sources, k, progress.advance):
            write(pa.table({"src": scorer.node_ids.of(found.source),
                            "dst": scorer.node_ids.of(found.candidate),
                            "score": pa.array(found.score.double().numpy()),
                            "rank": pa.array(found.rank.numpy())}))
            rows += found.source.numel()
        if rows == 0:
            raise PLNLPError("there is no new link to recommend: every node named is linked "
                             "to every other.")
    seconds = time.perf_counter() - start
    return (f"wrote the top {k} new links of {sources.numel():,} nodes ({rows:,} rows) in "
            f"{seconds:.1f} s into {out}")


def node_list(nodes: str) -> pa.Array:
    """``--for``'s nodes: a file's ``id`` column (else its first), or ids
    separated by commas."""
    path = Path(nodes)
    if path.suffix in FORMATS:
        table = read_table(path, "--for")
        return table.column("id" if "id" in table.column_names else 0)
    return pa.array([part.strip() for part in nodes.split(",") if part.strip()])


class Progress:
    """Prints how far long work has come, at most every few seconds."""

    EVERY_S = 5.0

    def __init__(self, total: int, unit: str) -> None:
        self.total, self.unit, self.done = total, unit, 0
        self.start = self.last = time.perf_counter()

    def advance(self, count: int) -> None:
        self.done += count
        now = time.perf_counter()
        if now - self.last < self.EVERY_S or self.done >= self.total:
            return
        self.last = now
        eta = (now - self.start) / self.done * (self.total - self.done)
        print(f"{self.done:,}/{self.total:,} {self.unit} ({self.done / self.total:.0%}), "
              f"ETA {eta:.0f} s", file=sys.stderr, flush=True)


def write_table(table: pa.Table, path: Path) -> None:
    with table_writer(path) as write:
        write(table)


@contextmanager
def table_writer(path: Path) -> Iterator[object]:
    """A function that appends tables to ``path`` (CSV or Parquet), created
    at the first one."""
    writer = None

    def write(table: pa.Table) -> None:
        nonlocal writer
        if writer is None:
            writer = (pq.ParquetWriter(path, table.schema) if path.suffix == ".parquet"
                      else pcsv.CSVWriter(path, table.schema))
        writer.write_table(table)

    try:
        yield write
    finally:
        if writer is not None:
            writer.close()


def main(argv: list[str] | None = None) -> int:
    skip_final_collection()
    args = parse_args(argv)
    try:
        pairs = check_args(args)
        from pipelines.runtime.console import quiet_model_loading
        from pipelines.runtime.home_folder import keep_home_clean
        from pipelines.runtime.model_source import load_scorer

        keep_home_clean()
        quiet_model_loading()
        scorer = load_scorer(args.model)
        if pairs is not None:
            summary = score_pairs(scorer, pairs, args.out)
        else:
            summary = recommend(scorer, args.top_k, args.nodes, args.out)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
