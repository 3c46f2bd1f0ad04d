"""Writes a synthetic stand-in of an OGB link dataset in OGB's exact on-disk
layout, up to its published size, so the pipelines run on a graph of that
shape without downloading it::

    python pipelines/standin.py --dataset ppa --size real --out data/standins
    python pipelines/run.py --dataset ppa --data-root data/standins

Needs neither Ray nor MLflow.
"""
import argparse
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pipelines/standin.py",
        description="Write a synthetic stand-in of an OGB link dataset, in OGB's layout, "
                    "under --out (then a valid --data-root).",
    )
    parser.add_argument("--dataset", required=True, help="ddi, collab, ppa or citation2")
    parser.add_argument("--size", default="tiny",
                        help="tiny, or real (the published size); default: tiny")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply nodes, edges and negative pairs by this, e.g. 0.01; "
                             "default: 1")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generator (default: 0)")
    parser.add_argument("--out", required=True, type=Path,
                        help="data root to write <out>/ogbl_<dataset> into")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # imported after parsing so that --help answers without loading torch
    from plnlp_core.data.standins import standin_size, write_standin
    from plnlp_core.errors import PLNLPError

    started = time.perf_counter()
    try:
        size = standin_size(args.dataset, args.size, args.scale)
        write_standin(args.dataset, args.out, size, args.seed)
    except PLNLPError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    folder = args.out / f"ogbl_{args.dataset}"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files:
        print(f"{path.stat().st_size:>15,} B  {path}")
    print(f"wrote {size.num_nodes:,} nodes, {size.train:,} training edges and "
          f"{sum(p.stat().st_size for p in files) / 2**20:,.1f} MiB to {folder} in "
          f"{time.perf_counter() - started:.1f} s; pass --data-root {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
