"""From a run to its use: each run's MLflow model, registered and loaded
in a fresh process, served by MLflow's real scoring server, and
``pipelines/predict.py`` scoring pairs and recommending links; the scores
agree everywhere with the run's own evaluation. The ddi model is made of the
parts of ``examples/link_parts`` (a ``--config`` file naming them), which
its model carries to a process where that package is not; the graph of
one's own is trained through :func:`pipelines.run.run_job` with a loss given
as a class."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from components.recording.model_export import CHAMPION, register_link_model
from examples.link_parts import MarginRankingLoss
from pipelines.planning.request import RunRequest
from pipelines.predict import main as predict
from pipelines.run import main as run
from pipelines.run import run_job
from plnlp_core.data.datasets import DATASETS
from plnlp_core.data.ogb_reader import load_ogb
from plnlp_core.parts.import_path import code_version
from plnlp_core.scoring.evaluation import ogb_metrics
from plnlp_testing.processes import free_port, process_group, wait_for_http
from tests.pipelines.test_own_graph import TINY, edge_list

pytestmark = pytest.mark.slow
PARTS = Path(__file__).resolve().parents[2] / "examples" / "link_parts" / "parts.yaml"


@pytest.fixture(scope="module")
def trained(ray_session, tmp_path_factory):
    """A small ddi stand-in model of the example parts registered as
    ``links`` and a model of a graph with string ids (through
    :func:`run_job`), in one MLflow store."""
    from tests.standin import write_ddi_standin

    folder = tmp_path_factory.mktemp("predict")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("MLFLOW_TRACKING_URI", uri)
        mlflow.set_tracking_uri(uri)
        root = write_ddi_standin(folder / "datasets")
        assert run(["--dataset", "ddi", "--preset", "smoke", "--data-root", str(root),
                    "--config", str(PARTS), "--register", "links", *TINY]) == 0
        own = run_job(RunRequest(str(edge_list(folder)), overrides=tuple(TINY[1::2])),
                      loss=MarginRankingLoss)
        assert run(["--dataset", "ddi", "--data-root", str(root), "--model", "heuristic:cn",
                    "--experiment", "heuristic"]) == 0
        client = MlflowClient()
        runs = {name: client.search_runs([client.get_experiment_by_name(name).experiment_id])[0]
                for name in ("plnlp-ddi", "plnlp-friends", "heuristic")}
        split = load_ogb(DATASETS.get("ddi"), root)
        yield {"uri": uri, "folder": folder, "runs": runs, "split": split, "own": own}


@pytest.fixture
def store(trained, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", trained["uri"])
    mlflow.set_tracking_uri(trained["uri"])
    return trained


def pairs_file(folder: Path, pairs, name: str = "pairs.csv") -> Path:
    path = folder / name
    pd.DataFrame(pairs, columns=["src", "dst"]).to_csv(path, index=False)
    return path


def scores_of(store, model: str, pairs, tmp_path) -> pd.Series:
    out = tmp_path / "scored.parquet"
    assert predict(["--model", model, "--pairs", str(pairs_file(tmp_path, pairs)),
                    "--out", str(out)]) == 0
    return pd.read_parquet(out)["score"]


def test_predicted_scores_give_the_runs_own_test_metrics(store, tmp_path, capsys):
    split, run_ = store["split"], store["runs"]["plnlp-ddi"]
    pos = scores_of(store, "models:/links@champion", split.test_pos.tolist(), tmp_path)
    neg = scores_of(store, f"runs:/{run_.info.run_id}/model", split.test_neg.tolist(), tmp_path)
    metrics = ogb_metrics(split.info, torch.tensor(pos.to_numpy()), torch.tensor(neg.to_numpy()))
    assert metrics["hits_20"] == pytest.approx(run_.data.metrics["final/test_hits_20"])
    assert "pairs/s" in capsys.readouterr().out


def test_top_k_leaves_out_known_edges_and_agrees_with_pair_scores(store, tmp_path, capsys):
    split = store["split"]
    out = tmp_path / "top.csv"
    assert predict(["--model", "models:/links/1", "--top-k", "5", "--out", str(out)]) == 0
    assert "top 5 new links of 60 nodes" in capsys.readouterr().out
    table = pd.read_csv(out)
    assert list(table.columns) == ["src", "dst", "score", "rank"]
    assert table.groupby("src")["rank"].apply(list).map(lambda r: r == [1, 2, 3, 4, 5]).all()
    known = {tuple(p) for part in (split.train_pos, split.valid_pos, split.test_pos)
             for p in part.tolist()}
    assert not any((u, v) in known or (v, u) in known or u == v
                   for u, v in zip(table["src"], table["dst"], strict=True))
    again = scores_of(store, "models:/links@champion", table[["src", "dst"]].values, tmp_path)
    assert again.to_numpy() == pytest.approx(table["score"].to_numpy(), abs=1e-5)


def test_a_graph_of_ones_own_is_scored_by_its_own_ids(store, tmp_path, capsys):
    model = f"runs:/{store['runs']['plnlp-friends'].info.run_id}/model"
    scores = scores_of(store, model, [("user1", "user2"), ("user7", "user0")], tmp_path)
    assert len(scores) == 2
    out = tmp_path / "top.parquet"
    assert predict(["--model", model, "--top-k", "3", "--for", "user5,user9",
                    "--out", str(out)]) == 0
    table = pd.read_parquet(out)
    assert set(table["src"]) == {"user5", "user9"} and table["dst"].str.startswith("user").all()
    assert predict(["--model", model, "--pairs",
                    str(pairs_file(tmp_path, [("user1", "stranger")])),
                    "--out", str(tmp_path / "bad.csv")]) == 2
    assert "'stranger' is not a node of the model's graph (it has 300 nodes)" in \
        capsys.readouterr().err
    assert not (tmp_path / "bad.csv").exists()


def test_the_champion_moves_only_to_a_better_version(store):
    run_id = store["runs"]["plnlp-ddi"].info.run_id
    line = register_link_model(run_id, "links", "final_valid_hits_20")
    assert line.startswith("registered links version 2") and f"{CHAMPION} stays version 1" in line
    client = MlflowClient()
    client.set_model_version_tag("links", "1", "final_valid_hits_20", "-1")
    assert "it is models:/links@champion" in register_link_model(run_id, "links",
                                                                   "final_valid_hits_20")
    assert str(client.get_model_version_by_alias("links", CHAMPION).version) == "3"


def test_an_existing_run_is_registered_without_training_again(store, capsys):
    from pipelines.register import main as register

    run_id = store["runs"]["plnlp-friends"].info.run_id  # a graph of one's own: by its AUC
    assert register([run_id, "friends"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("registered friends version 1 (final_valid_auc ")
    assert line.endswith("it is models:/friends@champion")
    version = MlflowClient().get_model_version_by_alias("friends", CHAMPION)
    assert version.run_id == run_id
    heuristic = store["runs"]["heuristic"].info.run_id
    assert register([heuristic, "friends"]) == 2
    assert "which has no model to load" in capsys.readouterr().err


PAIRS = [[0, 1], [2, 3], [4, 59], [10, 11]]


def test_a_run_records_its_parts_and_its_model_carries_their_code(store):
    params = store["runs"]["plnlp-ddi"].data.params
    assert params["encoder"] == "examples.link_parts.layers:GINLayer"
    assert params["encoder_options.train_eps"] == "True"
    assert params["loss_options.margin"] == "0.5" and params["sampler_options.tail_share"] == "0.5"
    version = code_version(params["encoder"])
    assert version.startswith("sha256:")  # examples/ is a loose package, installed nowhere
    assert {params[f"{kind}_version"] for kind in ("encoder", "predictor", "loss", "sampler")} \
        == {version}
    model = Path(mlflow.artifacts.download_artifacts("models:/links@champion"))
    assert (model / "code" / "examples" / "link_parts" / "layers.py").is_file()
    assert (model / "code" / "plnlp_core" / "assembly.py").is_file()


def test_run_job_returns_the_run_and_its_final_metrics_with_a_loss_given_as_its_class(store):
    own, run_ = store["own"], store["runs"]["plnlp-friends"]
    assert own.run_id == run_.info.run_id and own.main_metric == "auc"
    assert own.metrics["final_test_auc"] == pytest.approx(run_.data.metrics["final/test_auc"])
    assert run_.data.params["loss"] == "examples.link_parts.losses:MarginRankingLoss"


def test_the_model_loads_in_a_fresh_process_where_its_parts_package_is_not(store, tmp_path):
    script = ("import json, sys, mlflow, pandas as pd; "
              "m = mlflow.pyfunc.load_model('models:/links@champion'); "
              f"print(json.dumps(m.predict(pd.DataFrame({PAIRS}, columns=['src', 'dst']))"
              "['score'].tolist())); print(sys.modules['examples'].__file__)")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MLFLOW_TRACKING_URI"] = store["uri"]
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=True)
    scores, examples = done.stdout.strip().splitlines()[-2:]
    assert Path(examples).parts[-3:] == ("code", "examples", "__init__.py")  # the model's copy
    assert json.loads(scores) == pytest.approx(
        scores_of(store, "models:/links@champion", PAIRS, tmp_path).tolist(), abs=1e-5)


@pytest.fixture(scope="module")
def served(trained, tmp_path_factory) -> Iterator[int]:
    """MLflow's real scoring server of ``models:/links@champion``; its port."""
    folder = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = {**os.environ, "MLFLOW_TRACKING_URI": trained["uri"]}
    argv = [sys.executable, "-m", "mlflow", "models", "serve", "-m", "models:/links@champion",
            "--env-manager", "local", "--host", "127.0.0.1", "--port", str(port)]
    with process_group(argv, env, folder, folder / "serve.log"):
        wait_for_http(f"http://127.0.0.1:{port}/ping", folder / "serve.log", timeout=180)
        yield port


def test_mlflow_models_serve_answers_with_the_same_scores(store, served, tmp_path):
    answer = post(served, {"dataframe_split": {"columns": ["src", "dst"], "data": PAIRS}})
    assert [row["score"] for row in answer["predictions"]] == pytest.approx(
        scores_of(store, "models:/links@champion", PAIRS, tmp_path).tolist(), abs=1e-5)


@pytest.mark.parametrize("pair", [[0, 600], [1.5, 5], [1.9, 5], [0, None], [0, "x"], [True, 5]],
                         ids=["unknown", "fraction", "near-fraction", "blank", "text", "boolean"])
def test_mlflow_models_serve_refuses_what_predict_refuses_in_the_same_sentence(
        store, served, tmp_path, capsys, pair):
    assert predict(["--model", "models:/links@champion", "--pairs",
                    str(pairs_file(tmp_path, [pair])), "--out", str(tmp_path / "out.csv")]) == 2
    refusal = [line for line in capsys.readouterr().err.splitlines()
               if line.startswith("error: ")]
    assert len(refusal) == 1
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(served, {"dataframe_split": {"columns": ["src", "dst"], "data": [pair]}})
    assert refused.value.code == 400
    assert refusal[0].removeprefix("error: ") in json.loads(refused.value.read())["message"]


def post(port: int, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/invocations",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())
