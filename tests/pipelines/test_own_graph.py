"""A graph of one's own through the pipeline: an edge list and a split folder
end to end with AUC and Hits@K in MLflow, and the heuristics in the same
harness, on own graphs and OGB datasets alike."""
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from pipelines.run import main

pytestmark = pytest.mark.slow

TINY = ["--set", "embedding_dim=16", "--set", "hidden_channels=16", "--set", "predictor_hidden=16",
        "--set", "epochs=3", "--set", "batch_size=256", "--set", "eval_every=1"]


def edge_list(folder: Path) -> Path:
    """A 300-node community graph with string ids, one self-loop and one
    repeated edge, as a user's CSV export."""
    graph = nx.powerlaw_cluster_graph(300, 4, 0.5, seed=0)
    rows = [(f"user{u}", f"user{v}") for u, v in graph.edges()]
    rows += [("user1", "user1"), rows[0][::-1]]
    path = folder / "friends.csv"
    pd.DataFrame(rows, columns=["src", "dst"]).to_csv(path, index=False)
    return path


def the_run(uri: str, experiment: str):
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1
    return client, runs[0]


def test_an_edge_list_runs_end_to_end_with_auc_and_hits_in_mlflow(
        ray_session, mlflow_store, tmp_path):
    path = edge_list(tmp_path)
    assert main(["--dataset", str(path), *TINY]) == 0
    client, run = the_run(mlflow_store, "plnlp-friends")
    assert run.info.status == "FINISHED"
    for key in ("final/valid_auc", "final/test_auc", "final/test_hits_20", "final/test_hits_50"):
        assert 0.0 <= run.data.metrics[key] <= 1.0
    assert [m.step for m in client.get_metric_history(run.info.run_id, "valid_auc")] == [1, 2, 3]
    assert run.data.params["graph_self_loops"] == "1"
    assert run.data.params["graph_duplicates"] == "1"
    ids = pd.read_parquet(client.download_artifacts(run.info.run_id, "graph/node_ids.parquet"))
    assert len(ids) == 300 and set(ids["id"]) == {f"user{i}" for i in range(300)}


def test_a_split_folder_keeps_its_pairs_and_a_heuristic_scores_them(
        ray_session, mlflow_store, tmp_path):
    graph = nx.powerlaw_cluster_graph(200, 3, 0.6, seed=1)
    edges = list(graph.edges())
    non_edges = list(nx.non_edges(graph))[:40]
    folder = tmp_path / "exact"
    folder.mkdir()
    frame = pd.DataFrame
    frame([(u, v, 1) for u, v in edges[40:]], columns=["src", "dst", "label"]).to_csv(
        folder / "train.csv", index=False)
    for name, pos, neg in (("valid", edges[:20], non_edges[:20]),
                           ("test", edges[20:40], non_edges[20:])):
        frame([(u, v, 1) for u, v in pos] + [(u, v, 0) for u, v in neg],
              columns=["src", "dst", "label"]).to_parquet(folder / f"{name}.parquet")
    assert main(["--dataset", str(folder), "--model", "heuristic:ra", "--experiment", "h"]) == 0
    assert main(["--dataset", str(folder), *TINY, "--experiment", "p"]) == 0
    _, heuristic = the_run(mlflow_store, "h")
    _, plnlp = the_run(mlflow_store, "p")
    assert heuristic.data.params["model"] == "heuristic:ra"
    assert heuristic.data.metrics["final/test_auc"] > 0.7  # RA ranks clustered graphs well
    assert set(heuristic.data.metrics) >= {k for k in plnlp.data.metrics if k.startswith("final")}


def test_a_heuristic_runs_on_an_ogb_dataset_in_the_same_layout(
        ray_session, mlflow_store, standin_root):
    assert main(["--dataset", "ddi", "--data-root", str(standin_root),
                 "--model", "heuristic:ra"]) == 0
    _, run = the_run(mlflow_store, "plnlp-ddi")
    assert run.info.run_name.startswith("ddi-heuristic:ra")
    for key in ("final/valid_hits_20", "final/test_hits_20", "final/test_hits_100"):
        assert 0.0 <= run.data.metrics[key] <= 1.0


def test_bad_own_graph_input_is_refused_in_one_sentence(tmp_path, capsys):
    (tmp_path / "nodes.csv").write_text("from,to\n1,2\n")
    assert main(["--dataset", str(tmp_path / "nodes.csv"), "--model", "heuristic:cn"]) == 2
    assert "has no column src, dst (its columns: from, to)" in capsys.readouterr().err
    assert main(["--dataset", str(tmp_path / "missing.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["--dataset", str(tmp_path / "nodes.csv"), "--split", "random:0.5,0.5"]) == 2
    assert "does not parse" in capsys.readouterr().err
    assert main(["--dataset", "ddi", "--model", "heuristic:katz"]) == 2
    assert "unknown model 'heuristic:katz'" in capsys.readouterr().err


def test_sparse_features_as_lists_train_and_a_stray_id_is_warned_before_the_run(
        ray_session, mlflow_store, tmp_path, capsys):
    path = edge_list(tmp_path)
    tags = [f"user{i},{i % 20} {(i * 7) % 20}" for i in range(300)] + ["ghost,3"]
    features = tmp_path / "tags.csv"
    features.write_text("id,features\n" + "\n".join(tags) + "\n")
    argv = ["--dataset", str(path), "--node-features", str(features), *TINY,
            "--set", "input_projection=16"]
    assert main(argv) == 0
    warning = (f"warning: the node feature file {features} has rows for 1 ids that are no node "
               "of the graph (e.g. ghost); they are left out.")
    assert warning in capsys.readouterr().err
    _, run = the_run(mlflow_store, "plnlp-friends")
    assert run.info.status == "FINISHED"
    assert "the graph has 20 node features" in run.data.params["node_input_choice"]
