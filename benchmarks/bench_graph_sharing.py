"""The memory two Train workers on one node spend on the training graph:
each building its own CSR adjacency from the edges (what every worker did
before), against both memory-mapping the ``.npy`` files the ``load`` stage
writes (``components/storage/graph_files.py``).

    python benchmarks/bench_graph_sharing.py [--edges 1e7] [--nodes 1e6]

The graph is ``--edges`` uniformly random edges over ``--nodes`` nodes, its
files written once by :func:`write_graph_files`. Each mode runs two
processes side by side; each gets its adjacency (built: the edges read
whole, :func:`build_adjacency`, the edges dropped; mapped:
:func:`read_adjacency`), multiplies it by a vector once, so that every
page of it is resident as in message passing, and waits. While both wait,
their ``/proc/<pid>/smaps_rollup`` is read: RSS counts a page shared by
two processes in both, PSS half in each, so the two PSS add up to what
the node holds. ``import only`` is two processes that import the same
modules and build nothing, the interpreter's and torch's own share.
"""
import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from components.storage.graph_files import read_adjacency, write_graph_files
from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.graph import build_adjacency

EDGES_FILE = "edges.npy"
MODES = ("import only", "built", "mapped")


def write_graph(directory: Path, num_edges: int, num_nodes: int) -> int:
    """Writes random edges and their graph files under ``directory``;
    returns the adjacency's number of stored entries."""
    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(num_nodes, (num_edges, 2), generator=generator)
    edges = edges[edges[:, 0] != edges[:, 1]]
    np.save(directory / EDGES_FILE, edges.numpy())
    empty = torch.empty(0, 2, dtype=torch.long)
    info = DatasetInfo("bench", "bench", "auc", False, 0)
    write_graph_files(LinkSplit(info, num_nodes, None, edges, None, None,
                                empty, empty, empty, empty), directory)
    return int(np.load(directory / "adj_col.npy", mmap_mode="r").shape[0])


def hold_graph(mode: str, directory: Path, num_nodes: int) -> None:
    """A worker's side: gets the adjacency as ``mode`` says, touches all of
    it, says how long getting it took and waits for a line on stdin."""
    start = time.perf_counter()
    if mode == "built":
        edges = torch.from_numpy(np.load(directory / EDGES_FILE))
        adj, degree = build_adjacency(edges, num_nodes)
        del edges
    elif mode == "mapped":
        adj, degree = read_adjacency(directory, num_nodes)
    if mode != "import only":
        _ = (adj @ torch.ones(num_nodes, 1)).sum() + degree.sum()
    print(f"{time.perf_counter() - start:.2f}", flush=True)
    sys.stdin.readline()


def memory_kib(pid: int) -> dict[str, int]:
    """``Rss`` and ``Pss`` of process ``pid`` (KiB), and its peak RSS."""
    fields = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":")
        fields[name] = int(value.split()[0])
    status = Path(f"/proc/{pid}/status").read_text()
    peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return {"rss": fields["Rss"], "pss": fields["Pss"], "peak": int(peak.split()[1])}


def measure(mode: str, directory: Path, num_nodes: int) -> dict[str, float]:
    """Two processes holding the graph as ``mode`` says, side by side."""
    command = [sys.executable, __file__, "--hold", mode, "--directory", str(directory),
               "--nodes", str(num_nodes)]
    workers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True) for _ in range(2)]
    seconds = [float(worker.stdout.readline()) for worker in workers]
    memory = [memory_kib(worker.pid) for worker in workers]
    for worker in workers:
        worker.communicate("\n")
    mib = {key: [m[key] / 1024 for m in memory] for key in ("rss", "pss", "peak")}
    return {"seconds": max(seconds), "rss": mib["rss"][0], "pss": mib["pss"][0],
            "pss_both": sum(mib["pss"]), "peak": max(mib["peak"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=float, default=1e7)
    parser.add_argument("--nodes", type=float, default=1e6)
    parser.add_argument("--hold", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--directory", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    num_nodes = int(args.nodes)
    if args.hold:
        hold_graph(args.hold, args.directory, num_nodes)
        return
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as folder:
        directory = Path(folder)
        nnz = write_graph(directory, int(args.edges), num_nodes)
        files = sum(p.stat().st_size for p in directory.glob("*.npy")) - \
            (directory / EDGES_FILE).stat().st_size
        print(f"{int(args.edges):,} edges over {num_nodes:,} nodes: {nnz:,} adjacency entries, "
              f"graph files {files / 2**20:.0f} MiB")
        print("| mode | seconds to the graph | RSS a process (MiB) | PSS a process (MiB) "
              "| PSS both (MiB) | peak RSS a process (MiB) |")
        print("| --- | --- | --- | --- | --- | --- |")
        for mode in MODES:
            row = measure(mode, directory, num_nodes)
            print(f"| {mode} | {row['seconds']:.2f} | {row['rss']:.0f} | {row['pss']:.0f} "
                  f"| {row['pss_both']:.0f} | {row['peak']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
