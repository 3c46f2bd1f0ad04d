"""The personalized PageRank push of HeaRT's hard negatives
(:class:`plnlp_core.scoring.hard_negatives._Push`, HeaRT's ``calc_ppr``):
CPU milliseconds an anchor, over Python lists and over numpy arrays side by
side, on graphs of several degrees, at the ``eps`` HeaRT gives ddi and
collab (1e-5) and its ``alpha`` (0.15), and which way the push takes there
(below a mean degree of ``LIST_PUSH_DEGREE``, lists).

    python benchmarks/heart_push.py [--data-root DIR] [--anchors 40]

The graphs: the 60-node ddi stand-in the tests build, uniform random graphs
of mean degree 9 (collab's), 40 and 100, a power-law graph of 100,000
nodes (``bench_sampling.py``'s generator, degree 8), and, where it is
under ``--data-root``, the real ogbl-ddi's training graph (degree 500).
Each anchor is pushed once each way, after the lists are made.
"""
import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from bench_sampling import power_law_edges
from tables import format_rows
from timing import device_name

from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.data.standins import StandinSize, write_standin
from plnlp_core.scoring.hard_negatives import LIST_PUSH_DEGREE, _Push
from plnlp_core.scoring.heuristics import adjacency

EPS, ALPHA = 1e-5, 0.15


def uniform_edges(num_nodes: int, num_edges: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(num_nodes, (num_edges, 2), generator=generator)


def graphs(data_root: Path) -> Iterator[tuple[str, torch.Tensor, int]]:
    """Each graph's name, edges and number of nodes."""
    with tempfile.TemporaryDirectory() as folder:  # the tests' (tests/standin.py)
        root = write_standin("ddi", Path(folder), StandinSize(60, 320, 40, 40, 40, 40), seed=0)
        standin = load_ogb(DATASETS.get("ddi"), root)
    yield "ddi stand-in", standin.train_pos, standin.num_nodes
    for degree, num_nodes in ((9, 20_000), (40, 5_000), (100, 4_000)):
        yield f"uniform, degree {degree}", uniform_edges(num_nodes, degree * num_nodes // 2), \
            num_nodes
    yield "power-law", power_law_edges(400_000, 100_000), 100_000
    if (data_root / "ogbl_ddi").exists():
        ddi = load_ogb(DATASETS.get("ddi"), data_root)
        yield "ogbl-ddi (train)", ddi.train_pos, ddi.num_nodes


def ms_per_anchor(edges: torch.Tensor, num_nodes: int, anchors: int
                  ) -> tuple[float, dict[str, float]]:
    """The graph's mean degree and each way's CPU milliseconds an anchor."""
    adj = adjacency(edges, num_nodes)
    adj.sort_indices()
    push = _Push(adj, EPS, ALPHA)
    chosen = np.arange(0, num_nodes, max(1, num_nodes // anchors))[:anchors].tolist()
    assert push._as_lists  # made once per graph, before the clock starts
    ms = {}
    for way, walk in (("lists", push._push_lists), ("numpy", push._push_arrays)):
        start = time.process_time()
        for anchor in chosen:
            walk(anchor)
        ms[way] = 1000 * (time.process_time() - start) / len(chosen)
    return adj.nnz / num_nodes, ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--anchors", type=int, default=40)
    args = parser.parse_args(argv)
    rows = []
    for name, edges, num_nodes in graphs(args.data_root):
        degree, ms = ms_per_anchor(edges, num_nodes, args.anchors)
        taken = "lists" if degree < LIST_PUSH_DEGREE else "numpy"
        rows.append([name, f"{num_nodes:,}", f"{degree:.1f}", f"{ms['lists']:.2f}",
                     f"{ms['numpy']:.2f}", taken])
    print(f"HeaRT's push, eps {EPS:g}, alpha {ALPHA:g}, {device_name(torch.device('cpu'))}")
    print(format_rows(["graph", "nodes", "mean degree", "lists (ms)", "numpy (ms)", "taken"],
                      rows))


if __name__ == "__main__":
    main()
