"""The preset a graph starts from: for a graph of one's own the edge level
below SAMPLED_FROM_EDGES edges, the node level with neighbour sampling from
there on, and with node features the recipe of its mean degree, the choice
printed and kept with the run's params; for Planetoid's graphs the recipe
of theirs."""
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.planning import presets
from pipelines.planning.request import GraphFlags, RunRequest
from pipelines.planning.run_plan import plan_run
from plnlp_core.data.own_graph import count_edges


def write_edges(folder, count: int, suffix: str):
    table = pa.table({"src": [f"n{i}" for i in range(count)],
                      "dst": [f"n{(i * 7 + 1) % count}" for i in range(count)]})
    path = folder / f"edges{suffix}"
    if suffix == ".csv":
        path.write_text("src,dst\n" + "\n".join(f"n{i},n{(i * 7 + 1) % count}"
                                                 for i in range(count)))  # no last newline
    else:
        pq.write_table(table, path)
    return path


def test_edges_are_counted_from_a_parquet_footer_and_a_csv_s_lines(tmp_path):
    assert count_edges(write_edges(tmp_path, 1234, ".parquet")) == 1234
    assert count_edges(write_edges(tmp_path, 1234, ".csv")) == 1234
    (tmp_path / "empty.csv").write_text("src,dst\n")
    assert count_edges(tmp_path / "empty.csv") == 0


def test_a_large_own_graph_starts_sampled_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(presets, "SAMPLED_FROM_EDGES", 500)
    large = plan_run(RunRequest(dataset=str(write_edges(tmp_path, 800, ".parquet"))))
    assert large.preset == "sampled" and large.config.fanouts == (15, 10)
    assert large.config.encoder_level == "node"
    printed = capsys.readouterr().out
    assert "preset sampled: the graph has 800 edges, at least 500" in printed
    assert large.params()["preset_choice"] in printed
    small = plan_run(RunRequest(dataset=str(write_edges(tmp_path, 300, ".csv"))))
    assert small.preset == "default" and small.config.encoder_level == "edge"
    assert "300 edges, fewer than 500" in small.params()["preset_choice"]
    chosen = plan_run(RunRequest(dataset=str(tmp_path / "edges.parquet"), preset="node"))
    assert chosen.preset == "node" and "preset_choice" not in chosen.params()
    assert "preset_choice" not in plan_run(RunRequest(dataset="ddi", yes=True)).params()


def write_features(folder, count: int):
    path = folder / "features.csv"
    path.write_text("id,a,b\n" + "\n".join(f"n{i},{i % 3},{i % 5}" for i in range(count)))
    return path


def test_a_graph_with_node_features_trains_on_them_by_default_and_says_why(tmp_path, capsys):
    """Features a user gives are used without a second flag: the ``features``
    preset by default, and ``both`` for a preset that leaves the node input
    out; the run prints and logs which input it trains on and why."""
    edges = write_edges(tmp_path, 300, ".csv")
    graph = GraphFlags(node_features=str(write_features(tmp_path, 300)))
    default = plan_run(RunRequest(dataset=str(edges), graph=graph))  # mean degree 2
    assert default.preset == "sparse_features" and default.config.node_input == "features"
    assert default.params()["preset_choice"] == (
        "preset sparse_features: the graph has node features, 300 edges, fewer than 250,000, "
        "and a mean degree of 2.00, below 3.3 (--preset chooses another)")
    denser = tmp_path / "denser.csv"
    denser.write_text("src,dst\n" + "".join(f"n{i},n{(i + step) % 300}\n" for i in range(300)
                                            for step in (1, 2)))
    dense = plan_run(RunRequest(dataset=str(denser), graph=graph))
    assert dense.preset == "features" and dense.config.dropout == 0.0
    assert "a mean degree of 4.00, at least 3.3" in dense.params()["preset_choice"]
    node = plan_run(RunRequest(dataset=str(edges), graph=graph, preset="node"))
    assert node.config.node_input == "both"
    assert node.params()["node_input_choice"] == (
        "node input both (chosen for the graph; the graph has 2 node features): --set "
        "node_input=embedding trains on the embedding alone")
    assert node.params()["node_input_choice"] in capsys.readouterr().out
    alone = plan_run(RunRequest(dataset=str(edges), graph=graph, preset="node",
                                overrides=("node_input=embedding",)))
    assert alone.config.node_input == "embedding" and "node_input" in alone.changed_settings()
    assert alone.params()["node_input_choice"].startswith(
        "node input embedding (as the config or --set says; the graph has 2 node features): "
        "--set node_input=both uses them")
    bare = plan_run(RunRequest(dataset=str(edges), preset="node"))
    assert bare.config.node_input == "embedding"
    assert bare.params()["node_input_choice"] == \
        "node input embedding (chosen for the graph; the graph has no node features)"
    assert "node_input" not in node.changed_settings()  # chosen, not changed


def test_cora_starts_from_the_planetoid_feature_preset_on_ncn_s_split():
    plan = plan_run(RunRequest(dataset="cora"))
    assert plan.preset == "default" and plan.config.node_input == "features"
    assert plan.request.graph.split_of(plan.source.info) == "random:0.70,0.10,0.20"
    assert plan.source.info.main_metric_key == "hits_100"
    assert plan.source.info.metric_keys == ["hits_20", "hits_50", "hits_100", "auc", "mrr"]


def test_planetoids_graphs_start_from_the_recipe_of_their_mean_degree():
    assert presets.default_preset(False, dataset="cora") == "default"  # 3.90
    assert presets.default_preset(False, dataset="citeseer") == "sparse"  # 2.74
    assert presets.default_preset(False, dataset="pubmed") == "default"  # 4.50
    citeseer = plan_run(RunRequest(dataset="citeseer"))
    assert citeseer.preset == "sparse" and citeseer.config.dropout == 0.75
    assert citeseer.params()["preset_choice"] == (
        "preset sparse: citeseer has node features and a mean degree of 2.74, below 3.3 "
        "(--preset chooses another)")
    assert plan_run(RunRequest(dataset="cora")).config.edge_dropout == 0.4
