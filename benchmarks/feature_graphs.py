"""Graphs with node features like those users bring, and a recipe trained on
them as ``pipelines/run.py --dataset FILE.csv --node-features FEATURES.csv``
reads them.

    python benchmarks/feature_graphs.py [--graphs social,sparse_copurchase]
        [--preset features] [--config FILE.yaml key=value ...] [--seeds 0-2] [--threads 2]

Each graph is generated from communities: a node belongs to one, links
mostly inside it (``homophily``), and its features say which it belongs to
only in part, so that neither the features nor the graph alone give the
links away:

* ``social``: 7,126 nodes, about 35,000 edges, heavy-tailed degrees, each
  node's 5 to 40 tags among 2,545 (0.8 % set), written as the ``id,
  features`` list form (a social network's size, issue 83's figure);
* ``sparse_copurchase``: 3,300 nodes of mean degree 2.7 (CiteSeer's
  sparseness), a bag of 30 words among 3,000, list form;
* ``dense_copurchase``: 3,000 nodes of mean degree 8, 32 dense numeric
  features (the wide form).

The edges are split as a graph of one's own is (85/5/10 at random, one
evaluation negative per held-out positive), and the run is scored by AUC
and Hits@100 (``plnlp_core`` alone: no Ray, no MLflow). ``--preset`` names a
preset of ``pipelines/presets/own.yaml`` (default ``features``) or
``planetoid:NAME`` one of ``planetoid.yaml``.
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from cora_recipe import parse_seeds, with_overrides

from pipelines.planning.presets import OWN_PRESETS, load_preset
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.own_graph import load_own_graph
from plnlp_core.training.experiment import prepare_experiment, run_experiment

GRAPHS = {
    "social": dict(nodes=7126, mean_degree=9.9, communities=60, homophily=0.7, tail=2.2,
                   vocab=2545, words=(5, 40), topic=120, dense=0),
    "sparse_copurchase": dict(nodes=3300, mean_degree=2.7, communities=6, homophily=0.8,
                              tail=0.0, vocab=3000, words=(30, 30), topic=400, dense=0),
    "dense_copurchase": dict(nodes=3000, mean_degree=8.0, communities=20, homophily=0.75,
                             tail=0.0, vocab=0, words=(0, 0), topic=0, dense=32),
}
"""Each graph's generator settings (see :func:`community_graph`)."""


def community_graph(nodes: int, mean_degree: float, communities: int, homophily: float,
                    tail: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``nodes`` in ``communities``, about ``nodes * mean_degree / 2``
    undirected edges, a fraction ``homophily`` of them inside a community;
    endpoints drawn by a Pareto(``tail``) propensity (0: uniform). Returns
    the edges ``[E, 2]`` and each node's community."""
    rng = np.random.default_rng(seed)
    community = rng.integers(communities, size=nodes)
    weight = rng.pareto(tail, nodes) + 1 if tail else np.ones(nodes)
    edges = int(nodes * mean_degree / 2 * 1.05)  # a few repeats are dropped on reading
    sources = rng.choice(nodes, edges, p=weight / weight.sum())
    targets = rng.choice(nodes, edges, p=weight / weight.sum())
    inside = np.flatnonzero(rng.random(edges) < homophily)
    for group in range(communities):
        members = np.flatnonzero(community == group)
        chosen = inside[community[sources[inside]] == group]
        p = weight[members] / weight[members].sum()
        targets[chosen] = rng.choice(members, len(chosen), p=p)
    return np.stack([sources, targets], axis=1), community


def tag_lists(community: np.ndarray, vocab: int, words: tuple[int, int], topic: int,
              seed: int) -> list[str]:
    """Each node's distinct words, half from its community's ``topic``
    words and half from the whole ``vocab``, as space-separated indices."""
    rng = np.random.default_rng(seed + 1)
    topics = [rng.choice(vocab, topic, replace=False) for _ in range(community.max() + 1)]
    lists = []
    for group in community:
        count = rng.integers(words[0], words[1] + 1)
        own = rng.random(count) < 0.5
        drawn = np.where(own, rng.choice(topics[group], count), rng.integers(vocab, size=count))
        lists.append(" ".join(map(str, np.unique(drawn))))
    return lists


def write_graph(name: str, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """``name``'s edge list and feature file in ``folder``."""
    spec = GRAPHS[name]
    edges, community = community_graph(spec["nodes"], spec["mean_degree"], spec["communities"],
                                       spec["homophily"], spec["tail"], seed)
    edge_file = folder / f"{name}.csv"
    edge_file.write_text("src,dst\n" + "".join(f"{u},{v}\n" for u, v in edges.tolist()))
    feature_file = folder / f"{name}_features.csv"
    if spec["dense"]:
        rng = np.random.default_rng(seed + 2)
        centres = rng.normal(size=(community.max() + 1, spec["dense"]))
        x = centres[community] + 1.5 * rng.normal(size=(len(community), spec["dense"]))
        header = "id," + ",".join(f"f{i}" for i in range(spec["dense"]))
        rows = (f"{i}," + ",".join(f"{v:.4f}" for v in row) for i, row in enumerate(x))
        feature_file.write_text(header + "\n" + "\n".join(rows) + "\n")
    else:
        lists = tag_lists(community, spec["vocab"], spec["words"], spec["topic"], seed)
        feature_file.write_text("id,features\n" + "".join(
            f"{i},{tags}\n" for i, tags in enumerate(lists)))
    return edge_file, feature_file


def read_settings(preset: str, items: list[str]) -> dict[str, object]:
    """The preset's settings with each YAML file or ``key=value`` of ``items`` over them."""
    file, _, name = preset.rpartition(":")
    return with_overrides(load_preset(file or OWN_PRESETS, name), items)


def run(files: tuple[Path, Path], settings: dict[str, object], seed: int) -> dict[str, float]:
    """One seed: the split of ``seed`` of the graph in ``files`` (edges,
    features) and the model, trained; the best validation epoch's metrics
    and the seconds."""
    edges, features = files
    name = edges.stem
    split = load_own_graph(edges, seed=seed, features=features, hits_k=(100,)).split
    config = PLNLPConfig.from_mapping({**settings, "dataset": name, "seed": seed})
    start = time.perf_counter()
    result = run_experiment(prepare_experiment(config, split))
    return {**result.best_metrics, "seconds": time.perf_counter() - start}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--preset", default="features")
    parser.add_argument("--config", nargs="*", default=[])
    parser.add_argument("--seeds", default="0-2")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    settings = read_settings(args.preset, args.config)
    folder = Path(tempfile.mkdtemp(prefix="feature-graphs-"))
    keys = ("valid_auc", "valid_hits_100", "test_auc", "test_hits_100", "seconds")
    for name in args.graphs.split(","):
        files = write_graph(name, folder)
        rows = [run(files, settings, seed) for seed in parse_seeds(args.seeds)]
        cells = []
        for key in keys:
            values = [row[key] * (1 if key == "seconds" else 100) for row in rows]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{key} {statistics.mean(values):.2f} ± {spread:.2f}")
        print(f"{name:18s} " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
