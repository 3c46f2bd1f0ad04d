"""PLNLP's ``default`` preset for graphs of one's own against the classic
heuristics, on a suite of synthetic and bundled graphs.

    python benchmarks/own_graphs.py [--quick] [--json FILE] [--preset NAME[,NAME]] [--only G,..]

Each graph of the suite (social, biological, infrastructure, co-authorship,
community and scale-free graphs from networkx's generators and the small
graphs networkx ships) is written as a CSV edge list (``src,dst``) in a
temporary folder and read by :func:`plnlp_core.data.own_graph.load_own_graph`,
exactly as ``pipelines/run.py --dataset FILE.csv`` reads it: a seeded random
85/5/10 split with one fixed evaluation negative per held-out positive.
Common neighbours (CN), Adamic-Adar (AA) and resource allocation (RA) score
the test pairs on the training graph; PLNLP trains with the preset of
``pipelines/presets/own.yaml``, its best epoch chosen by validation AUC, and
is scored on the same test pairs. Small graphs are run with several split
seeds (mean and standard deviation); the table gives test AUC and the
seconds PLNLP took (training and evaluation, on the threads set by
``--threads``), one column per preset: ``--preset node,default`` sets the
node level beside the edge level (the default). The suite ends with sparse
networks where common neighbours are rare (power grids, a road network,
router- and AS-level internet topologies, mean degree 2.6 to 3.3).

Only ``plnlp_core`` is used (no Ray, no MLflow).
"""
import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import torch
from baselines import heuristic_metrics
from tables import format_rows
from timing import timed

from pipelines.planning.presets import OWN_PRESETS, PRESETS_DIR, load_preset
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import LinkSplit
from plnlp_core.data.own_graph import load_own_graph
from plnlp_core.training.experiment import prepare_experiment, run_experiment

ROOT = Path(__file__).resolve().parents[1]
PRESETS = PRESETS_DIR / f"{OWN_PRESETS}.yaml"
HEURISTIC_NAMES = ("cn", "aa", "ra")


# The suite -----------------------------------------------------------------------

@dataclass(frozen=True)
class SuiteGraph:
    """One graph of the suite: its name, its kind (what real graphs it
    stands for), a builder from a generator seed, and how many split seeds
    it is run with."""

    name: str
    kind: str
    build: Callable[[int], nx.Graph]
    seeds: int = 3


def coauthorship(num_authors: int, num_papers: int, groups: int, seed: int) -> nx.Graph:
    """A co-authorship graph: each paper has 2 to 6 authors, drawn mostly
    from one research group with preferential attachment to productive
    authors (20 % from anywhere), projected to one author-author clique per
    paper."""
    rng = np.random.default_rng(seed)
    group_of = rng.integers(groups, size=num_authors)
    members = [np.flatnonzero(group_of == g) for g in range(groups)]
    papers = np.ones(num_authors)
    graph = nx.Graph()
    graph.add_nodes_from(range(num_authors))
    for _ in range(num_papers):
        pool = members[rng.integers(groups)]
        size = min(int(rng.choice([2, 2, 3, 3, 3, 4, 4, 5, 6])), len(pool))
        weights = papers[pool] / papers[pool].sum()
        authors = set(rng.choice(pool, size=size, replace=False, p=weights).tolist())
        if rng.random() < 0.2:
            authors.add(int(rng.integers(num_authors)))
        authors = sorted(authors)
        papers[authors] += 1
        graph.add_edges_from((a, b) for i, a in enumerate(authors) for b in authors[i + 1:])
    return graph


def grid_with_shortcuts(side: int, removed: float, shortcuts: int, seed: int) -> nx.Graph:
    """A power-grid-like graph: a ``side`` x ``side`` grid (no triangles, so
    adjacent nodes share no neighbour), a fraction ``removed`` of its lines
    cut, and ``shortcuts`` lines to a node at most 3 steps away on the
    lattice."""
    rng = np.random.default_rng(seed)
    grid = nx.convert_node_labels_to_integers(nx.grid_2d_graph(side, side))
    edges = [e for e in grid.edges if rng.random() >= removed]
    for _ in range(shortcuts):
        x, y = rng.integers(side, size=2)
        dx, dy = rng.integers(-3, 4, size=2)
        u, v = x * side + y, min(max(x + dx, 0), side - 1) * side + min(max(y + dy, 0), side - 1)
        if u != v:
            edges.append((int(u), int(v)))
    graph = nx.Graph(edges)
    graph.add_nodes_from(range(side * side))
    return graph


def power_grid(n: int, mean_degree: float, seed: int) -> nx.Graph:
    """A power-grid-like graph: ``n`` substations at random points of the unit
    square joined by the Euclidean minimum spanning tree of their 6 nearest
    neighbours (each line goes to a near part of the network), plus random
    lines among the nearest neighbours not yet joined until the mean degree
    is ``mean_degree`` (real grids: about 2.7). Few triangles, long cycles."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(seed)
    points = rng.random((n, 2))
    dist, near = cKDTree(points).query(points, k=7)
    knn = nx.Graph()
    knn.add_nodes_from(range(n))
    knn.add_weighted_edges_from((i, int(near[i, t]), float(dist[i, t]))
                                for i in range(n) for t in range(1, 7))
    graph = nx.minimum_spanning_tree(knn)
    spare = [e for e in knn.edges if not graph.has_edge(*e)]
    order = rng.permutation(len(spare))
    extra = max(int(mean_degree * n / 2) - graph.number_of_edges(), 0)
    graph.add_edges_from(spare[i] for i in order[:extra])
    return nx.Graph(graph.edges)


def road_network(n: int, mean_degree: float, seed: int) -> nx.Graph:
    """A road-network-like graph: ``n`` junctions at random points of the unit
    square, joined by the Euclidean minimum spanning tree of their Delaunay
    triangulation, plus its shortest remaining roads until the mean degree
    is ``mean_degree`` (real road graphs: about 2.5 to 3). Planar and
    locally meshed: short cycles among near junctions, no long links."""
    from scipy.spatial import Delaunay

    points = np.random.default_rng(seed).random((n, 2))
    mesh = nx.Graph()
    for a, b, c in Delaunay(points).simplices:
        mesh.add_edges_from(((a, b), (b, c), (a, c)))
    for u, v in mesh.edges:
        mesh.edges[u, v]["weight"] = float(np.linalg.norm(points[u] - points[v]))
    graph = nx.minimum_spanning_tree(mesh)
    spare = sorted((e for e in mesh.edges if not graph.has_edge(*e)),
                   key=lambda e: mesh.edges[e]["weight"])
    extra = max(int(mean_degree * n / 2) - graph.number_of_edges(), 0)
    graph.add_edges_from(spare[:extra])
    return nx.Graph((int(u), int(v)) for u, v in graph.edges)


def router_like(n: int, extra: float, local: bool, seed: int) -> nx.Graph:
    """A router-level-like topology: a preferential-attachment tree (each new
    router links to one existing router, chosen by degree) plus ``extra * n``
    redundant links, either between routers 2 or 3 hops apart (``local``:
    backup links within a region) or from a random router to one chosen by
    degree."""
    rng = np.random.default_rng(seed)
    graph = nx.barabasi_albert_graph(n, 1, seed=seed)
    nodes = np.arange(n)
    for _ in range(int(extra * n)):
        u = int(rng.integers(n))
        if local:
            lengths = nx.single_source_shortest_path_length(graph, u, cutoff=3)
            candidates = [v for v, d in lengths.items() if d >= 2]
            if not candidates:
                continue
            v = int(candidates[rng.integers(len(candidates))])
        else:
            degree = np.array([graph.degree(int(w)) for w in nodes], dtype=float)
            v = int(rng.choice(nodes, p=degree / degree.sum()))
        if u != v:
            graph.add_edge(u, v)
    return graph


def lfr(n: int, average_degree: float, mu: float, seed: int) -> nx.Graph:
    """An LFR benchmark graph (power-law degrees and community sizes,
    a fraction ``mu`` of each node's edges leaving its community)."""
    return nx.LFR_benchmark_graph(n, 2.5, 1.5, mu, average_degree=average_degree,
                                  max_degree=int(n ** 0.5 * 3), min_community=20,
                                  max_community=n // 10, seed=seed, max_iters=1000)


def davis() -> nx.Graph:
    """Davis's southern women: women and the events they attended, bipartite."""
    return nx.davis_southern_women_graph()


def suite(quick: bool = False) -> list[SuiteGraph]:
    """The graphs of the benchmark: a small quick suite, or the full one
    from tens of nodes up to 5,000 nodes and 100,000 edges."""
    small = [
        SuiteGraph("karate", "social (bundled)", lambda s: nx.karate_club_graph(), 5),
        SuiteGraph("les_miserables", "social (bundled)", lambda s: nx.les_miserables_graph(), 5),
        SuiteGraph("davis_women", "bipartite (bundled)", lambda s: davis(), 5),
    ]
    if quick:
        return [*small,
                SuiteGraph("holme_kim_500", "social", lambda s: nx.powerlaw_cluster_graph(
                    500, 4, 0.5, seed=s), 2)]
    return [
        *small,
        SuiteGraph("lfr_1000", "social, communities", lambda s: lfr(1000, 15, 0.2, s)),
        SuiteGraph("holme_kim_2000", "social, power law", lambda s: nx.powerlaw_cluster_graph(
            2000, 5, 0.5, seed=s)),
        SuiteGraph("duplication_2000", "protein interactions",
                   lambda s: nx.partial_duplication_graph(2000, 20, 0.4, 0.1, seed=s)),
        SuiteGraph("geometric_2000", "infrastructure, spatial", lambda s: nx.random_geometric_graph(
            2000, 0.035, seed=s)),
        SuiteGraph("grid_2500", "infrastructure, power grid", lambda s: grid_with_shortcuts(
            50, 0.1, 150, s)),
        SuiteGraph("coauthor_3000", "co-authorship", lambda s: coauthorship(3000, 4000, 150, s)),
        SuiteGraph("sbm_1500", "communities", lambda s: nx.stochastic_block_model(
            [300] * 5, [[0.04 if i == j else 0.002 for j in range(5)] for i in range(5)],
            seed=s)),
        SuiteGraph("barabasi_2000", "scale free, no clustering", lambda s: nx.barabasi_albert_graph(
            2000, 4, seed=s)),
        SuiteGraph("lfr_5000_100k", "social, 5k nodes / 100k edges", lambda s: lfr(
            5000, 32, 0.2, s), 1),
        *sparse_suite(),
    ]


def sparse_suite() -> list[SuiteGraph]:
    """Sparse networks where common neighbours are rare (mean degree 2.6 to
    3.3): power grids, a road network and router- and AS-level internet
    topologies."""
    return [
        SuiteGraph("power_grid_2000", "power grid, sparse", lambda s: power_grid(2000, 2.7, s)),
        SuiteGraph("lattice_2500", "power grid, perturbed lattice", lambda s: grid_with_shortcuts(
            50, 0.33, 50, s)),
        SuiteGraph("router_pa_2000", "router level, sparse", lambda s: router_like(
            2000, 0.3, False, s)),
        SuiteGraph("router_local_2000", "router level, regional backups", lambda s: router_like(
            2000, 0.3, True, s)),
        SuiteGraph("road_2000", "road network, planar", lambda s: road_network(2000, 2.8, s)),
        SuiteGraph("internet_as_2000", "AS-level internet", lambda s: nx.random_internet_as_graph(
            2000, seed=s)),
    ]


# Running -------------------------------------------------------------------------

def write_edge_list(graph: nx.Graph, path: Path) -> Path:
    """Writes ``graph``'s edges as a CSV edge list (``src,dst``) at ``path``."""
    lines = ["src,dst", *(f"{u},{v}" for u, v in graph.edges())]
    path.write_text("\n".join(lines) + "\n")
    return path


def load_split(graph: SuiteGraph, seed: int, folder: Path) -> LinkSplit:
    """The split of ``graph`` with split seed ``seed`` (the generator is
    seeded by it too), read from a CSV edge list as the pipeline reads it."""
    path = write_edge_list(graph.build(seed), folder / f"{graph.name}_{seed}.csv")
    return load_own_graph(path, seed=seed).split


def heuristics(split: LinkSplit) -> dict[str, dict[str, float]]:
    """CN, AA and RA's valid and test metrics on ``split``'s training graph."""
    return {name: heuristic_metrics(name, split) for name in HEURISTIC_NAMES}


def run_plnlp(split: LinkSplit, settings: dict[str, object],
              seed: int = 0) -> tuple[dict[str, float], float, int]:
    """Trains PLNLP with ``settings`` on ``split``; returns the metrics of the
    epoch with the best validation AUC, the seconds that training and
    evaluation took, and that epoch."""
    config = PLNLPConfig.from_mapping({**settings, "seed": seed})
    config.validate(split.info)
    seconds, result = timed(lambda: run_experiment(prepare_experiment(config, split)))
    return result.best_metrics, seconds, result.best_epoch


@dataclass
class GraphResult:
    """The test metrics of every method on one graph, one entry per split
    seed, and each PLNLP preset's seconds and best epochs (methods
    ``cn``, ``aa``, ``ra`` and ``plnlp:<preset>``)."""

    name: str
    kind: str
    nodes: int
    edges: int
    test_auc: dict[str, list[float]] = field(default_factory=dict)
    valid_auc: dict[str, list[float]] = field(default_factory=dict)
    test_hits: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    best_epochs: dict[str, list[int]] = field(default_factory=dict)

    def add(self, method: str, metrics: dict[str, float], hits_key: str | None) -> None:
        """Records ``metrics`` (``valid_auc``, ``test_auc``, and ``test_<hits_key>``
        unless the graph has too few negatives for any Hits@K)."""
        self.test_auc.setdefault(method, []).append(metrics["test_auc"])
        self.valid_auc.setdefault(method, []).append(metrics["valid_auc"])
        if hits_key is not None:
            self.test_hits.setdefault(method, []).append(metrics[f"test_{hits_key}"])


def run_graph(graph: SuiteGraph, presets: dict[str, dict[str, object]], folder: Path,
              seeds: int | None = None, log: Callable[[str], None] = print) -> GraphResult:
    """Runs the heuristics and PLNLP with each of ``presets`` (name to
    settings) on ``graph`` for each split seed."""
    result: GraphResult | None = None
    for seed in range(seeds or graph.seeds):
        split = load_split(graph, seed, folder)
        edges = sum(getattr(split, f"{part}_pos").size(0) for part in ("train", "valid", "test"))
        if result is None:
            result = GraphResult(graph.name, graph.kind, split.num_nodes, edges)
        hits_key = f"hits_{split.info.hits_k[0]}" if split.info.hits_k else None
        for name, metrics in heuristics(split).items():
            result.add(name, metrics, hits_key)
        best_heuristic = max(result.test_auc[h][-1] for h in HEURISTIC_NAMES)
        for preset, settings in presets.items():
            metrics, seconds, epoch = run_plnlp(split, settings, seed)
            method = f"plnlp:{preset}"
            result.add(method, metrics, hits_key)
            result.seconds.setdefault(method, []).append(seconds)
            result.best_epochs.setdefault(method, []).append(epoch)
            log(f"  {graph.name} seed {seed}: PLNLP {preset} test AUC {metrics['test_auc']:.4f} "
                f"(best epoch {epoch}, {seconds:.1f} s), best heuristic {best_heuristic:.4f}")
    assert result is not None
    return result


def mean_std(values: list[float]) -> str:
    """``mean ± std`` of ``values`` (the mean alone for one value)."""
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{np.mean(values):.3f} ± {np.std(values, ddof=1):.3f}"


def table(results: list[GraphResult]) -> str:
    """One row per graph: size, test AUC of CN, AA, RA and each PLNLP preset,
    each preset's margin over the best heuristic, and its seconds."""
    methods = list(results[0].seconds) if results else []
    header = ["graph", "nodes", "edges", "seeds", "CN", "AA", "RA",
              *(m.removeprefix("plnlp:") for m in methods),
              *(f"{m.removeprefix('plnlp:')} - best" for m in methods),
              *(f"{m.removeprefix('plnlp:')} s" for m in methods)]
    rows = []
    for r in results:
        best = max(np.mean(r.test_auc[h]) for h in HEURISTIC_NAMES)
        rows.append([r.name, str(r.nodes), str(r.edges), str(len(r.test_auc["cn"])),
                     *(mean_std(r.test_auc[h]) for h in HEURISTIC_NAMES),
                     *(mean_std(r.test_auc[m]) for m in methods),
                     *(f"{np.mean(r.test_auc[m]) - best:+.3f}" for m in methods),
                     *(f"{np.mean(r.seconds[m]):.1f}" for m in methods)])
    lines = format_rows(header, rows).splitlines()
    lines.insert(1, "-" * len(lines[0]))
    for m in methods:
        wins = sum(np.mean(r.test_auc[m]) > max(np.mean(r.test_auc[h]) for h in HEURISTIC_NAMES)
                   for r in results)
        lines.append(f"test AUC; PLNLP {m.removeprefix('plnlp:')} beats the best heuristic on "
                     f"{wins} of {len(results)} graphs")
    for m in methods:
        lines.append(f"validation AUC; PLNLP {m.removeprefix('plnlp:')}: mean over graphs "
                     f"{np.mean([np.mean(r.valid_auc[m]) for r in results]):.4f}")
    if len(methods) == 2:
        a, b = methods
        for part, scores in (("test", "test_auc"), ("validation", "valid_auc")):
            wins = sum(np.mean(getattr(r, scores)[b]) > np.mean(getattr(r, scores)[a])
                       for r in results)
            lines.append(f"{part} AUC; {b.removeprefix('plnlp:')} beats "
                         f"{a.removeprefix('plnlp:')} on {wins} of {len(results)} graphs")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="four small graphs, the 'quick' preset, for a check in a minute")
    parser.add_argument("--preset", help="comma-separated presets of pipelines/presets/own.yaml, "
                                         "each a column (default: 'default', 'quick' with "
                                         "--quick; e.g. node,default to compare the levels)")
    parser.add_argument("--only", help="comma-separated graph names to run")
    parser.add_argument("--seeds", type=int, help="split seeds per graph (default: 5 for "
                                                  "the bundled graphs, 3, 1 for 5k/100k)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Runs the suite and prints the table."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    preset = args.preset or ("quick" if args.quick else "default")
    presets = {name: load_preset(OWN_PRESETS, name) for name in preset.split(",")}
    graphs = suite(args.quick)
    if args.only:
        wanted = set(args.only.split(","))
        graphs = [g for g in graphs if g.name in wanted]
    shown = PRESETS.relative_to(ROOT) if PRESETS.is_relative_to(ROOT) else PRESETS  # PYTHONPATH
    print(f"preset {preset!r} of {shown}; {args.threads} threads")
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for graph in graphs:
            results.append(run_graph(graph, presets, Path(folder), args.seeds))
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({
            "presets": presets, "threads": args.threads,
            "graphs": [vars(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
