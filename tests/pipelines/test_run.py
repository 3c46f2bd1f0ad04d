"""The main job end to end through local Ray, checked in MLflow."""
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from components.recording.tags import FAILURE_TAG
from pipelines.run import main

pytestmark = pytest.mark.slow

STANDIN = ["--set", "embedding_dim=16", "--set", "hidden_channels=16",
           "--set", "predictor_hidden=16", "--set", "batch_size=64", "--set", "epochs=3"]


def only_run(uri: str, experiment: str, parent: bool = True):
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    tops = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(tops) == 1
    return client, tops[0], [r for r in runs if r is not tops[0]]


def test_standin_pipeline_with_random_walks_and_two_runs_lands_in_mlflow(
    ray_session, mlflow_store, standin_root: Path, capsys,
):
    argv = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root),
            "--runs", "2", "--set", "loss=weighted_hinge_auc", "--set", "walk_length=3", *STANDIN]
    assert main(argv) == 0
    client, parent, children = only_run(mlflow_store, "plnlp-ddi")
    assert parent.info.status == "FINISHED"
    printed = capsys.readouterr().out
    for child in children:  # a line a seed as it ends, then mean +- std first in the summary
        seed, test = child.data.params["seed"], child.data.metrics["final/test_hits_20"]
        assert f"seed {seed}  test hits_20 {100 * test:.2f}  valid hits_20" in printed
    mean, std = (parent.data.metrics[f"final/test_hits_20_{part}"] for part in ("mean", "std"))
    closing = f"test hits_20 {100 * mean:.2f} +- {100 * std:.2f} (2 runs)"
    assert printed.split("finished\n", 1)[1].startswith(f"  {closing}\n")
    assert parent.data.metrics["final/runs"] == 2
    assert closing.replace("+-", "±") in parent.data.tags["mlflow.note.content"]
    assert "final%2Fvalid_hits_20_mean" in printed  # the link ranks the parent first
    assert parent.data.params["loss"] == "weighted_hinge_auc"
    assert parent.data.params["walk_length"] == "3"
    for key in ("final/test_hits_20_mean", "final/test_hits_20_std", "final/valid_hits_20_mean"):
        assert 0.0 <= parent.data.metrics[key] <= 1.0
    assert sorted(c.data.params["seed"] for c in children) == ["0", "1"]
    assert {c.data.params["preset"] for c in children} == {"smoke"}
    assert children[0].data.params["walk_starts"] == "all"  # walks on: their settings shaped it
    assert "seeds_valid_curve.png" in {a.path for a in client.list_artifacts(parent.info.run_id)}
    for child in children:
        history = client.get_metric_history(child.info.run_id, "valid_hits_20")
        assert [m.step for m in history] == [1, 2, 3]
        assert len(client.get_metric_history(child.info.run_id, "train_loss")) == 3
        assert len(client.get_metric_history(child.info.run_id, "train_score_gap")) == 3
        best = max(history, key=lambda m: m.value)
        assert child.data.metrics["final/valid_hits_20"] == pytest.approx(best.value)
        test_at_best = {m.step: m.value for m in
                        client.get_metric_history(child.info.run_id, "test_hits_20")}[best.step]
        assert child.data.metrics["final/test_hits_20"] == pytest.approx(test_at_best)
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"config.yaml", "checkpoint", "metrics.csv", "learning_curve.png"} <= artifacts
        files = {a.path for a in client.list_artifacts(child.info.run_id, "checkpoint")}
        assert "checkpoint/model.pt" in files
        assert "plnlp.checkpoints" not in child.data.tags  # its folder is gone with the run


@pytest.mark.parametrize("sampler", ["hard", "adversarial"])
def test_model_guided_samplers_train_through_the_pipeline_and_log_the_score_gap(
    ray_session, mlflow_store, standin_root, sampler,
):
    argv = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root),
            "--experiment", sampler, "--set", f"sampler={sampler}", "--set", "candidate_pool=8",
            *STANDIN]
    assert main(argv) == 0
    client, run, _ = only_run(mlflow_store, sampler)
    assert run.data.params["sampler"] == sampler
    assert run.data.params["preset"] == "smoke"
    assert run.data.params["candidate_pool"] == "8"
    assert ("generator_dim" in run.data.params) == (sampler == "adversarial")
    assert not {"walk_starts", "degree_power", "ncn_beta"} & set(run.data.params)
    gaps = client.get_metric_history(run.info.run_id, "train_score_gap")
    assert [m.step for m in gaps] == [1, 2, 3]
    assert 0.0 <= run.data.metrics["final/test_hits_20"] <= 1.0


def test_the_edge_level_ene_preset_trains_and_evaluates_through_the_pipeline(
    ray_session, mlflow_store, standin_root,
):
    argv = ["--dataset", "ddi", "--preset", "ene", "--yes", "--data-root", str(standin_root),
            "--experiment", "ene", *STANDIN]  # NCN's ddi command, at the stand-in's sizes
    assert main(argv) == 0
    client, run, _ = only_run(mlflow_store, "ene")
    assert (run.data.params["encoder_level"], run.data.params["predictor"]) == ("edge", "ncn")
    assert [m.step for m in client.get_metric_history(run.info.run_id, "valid_hits_20")] == [
        1, 2, 3]
    assert 0.0 <= run.data.metrics["final/test_hits_20"] <= 1.0


def test_a_heuristic_run_logs_its_preset_and_graph_not_the_neural_settings(
    ray_session, mlflow_store, standin_root,
):
    argv = ["--dataset", "ddi", "--data-root", str(standin_root), "--model", "heuristic:cn",
            "--experiment", "cn"]
    assert main(argv) == 0
    client, run, _ = only_run(mlflow_store, "cn")
    assert run.data.params == {"model": "heuristic:cn", "preset": "paper", "dataset": "ddi",
                               "valid_as_input": "False", "min_train_year": "null",
                               "heart_negatives": "0"}
    config = client.download_artifacts(run.info.run_id, "config.yaml")
    assert "embedding_dim: 512" in Path(config).read_text()  # the resolved config, whole


def test_heart_negatives_are_built_once_and_score_a_model_and_a_heuristic_beside_ogb(
    ray_session, mlflow_store, standin_root, capsys,
):
    common = ["--dataset", "ddi", "--data-root", str(standin_root), "--set", "heart_negatives=16"]
    assert main([*common, "--preset", "smoke", "--experiment", "heart-model", *STANDIN]) == 0
    model_out = capsys.readouterr().out
    assert main([*common, "--model", "heuristic:ra", "--experiment", "heart-ra"]) == 0
    heuristic_out = capsys.readouterr().out
    assert "reusing cached heart output" in heuristic_out
    assert "building heart output" not in heuristic_out
    for out in (model_out, heuristic_out):
        assert "HeaRT test" in out and "ceiling test" in out
    for experiment in ("heart-model", "heart-ra"):
        _, run, _ = only_run(mlflow_store, experiment)
        assert run.data.params["heart_negatives"] == "16"
        assert run.data.params["heart_mode"] == "heart"
        for split in ("valid", "test"):
            heart = run.data.metrics[f"final/{split}_heart_mrr"]
            assert 1 / 17 <= heart <= run.data.metrics[f"final/{split}_heart_ceiling_mrr"] <= 1.0
            assert 0.0 <= run.data.metrics[f"final/{split}_heart_hits_3"] <= 1.0
            assert 0.0 <= run.data.metrics[f"final/{split}_hits_20"] <= 1.0  # OGB's, beside


def test_standin_pipeline_with_two_ddp_workers_finishes(ray_session, mlflow_store, standin_root):
    """Each Train worker builds the encoder layer and loss of examples/link_parts."""
    argv = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root),
            "--num-workers", "2", "--experiment", "ddp", *STANDIN,
            "--set", "encoder=examples.link_parts.layers:GINLayer",
            "--set", "loss=examples.link_parts.losses:MarginRankingLoss"]
    assert main(argv) == 0
    _, run, _ = only_run(mlflow_store, "ddp")
    assert run.data.params["num_workers"] == "2"
    assert run.data.params["encoder"] == "examples.link_parts.layers:GINLayer"
    assert 0.0 <= run.data.metrics["final/test_hits_20"] <= 1.0


def test_corrupt_dataset_marks_the_started_run_failed_with_the_reason(
    ray_session, mlflow_store, standin_root, capsys,
):
    (standin_root / "ogbl_ddi" / "split" / "target" / "valid.pt").write_bytes(b"not a pickle")
    argv = ["--dataset", "ddi", "--preset", "smoke", "--data-root", str(standin_root), *STANDIN]
    assert main(argv) == 1
    _, run, _ = only_run(mlflow_store, "plnlp-ddi")
    assert run.info.status == "FAILED"
    assert "could not be read" in run.data.tags[FAILURE_TAG]
    assert "could not be read" in capsys.readouterr().err


def test_too_many_workers_for_the_cluster_is_refused(ray_session, mlflow_store, capsys):
    assert main(["--dataset", "ddi", "--preset", "smoke", "--num-workers", "64"]) == 2
    assert "64 workers need 64 CPUs" in capsys.readouterr().err
    assert main(["--dataset", "ddi", "--preset", "smoke", "--cpus-per-worker", "3"]) == 2
    assert "1 workers need 3 CPUs" in capsys.readouterr().err
    assert main(["--dataset", "ddi", "--preset", "smoke", "--use-gpu"]) == 2
    assert "drop --use-gpu" in capsys.readouterr().err


def test_real_ddi_smoke_preset_records_final_hits_20(ray_session, mlflow_store, ddi_root):
    assert main(["--dataset", "ddi", "--preset", "smoke", "--data-root", str(ddi_root)]) == 0
    client, run, _ = only_run(mlflow_store, "plnlp-ddi")
    assert run.info.status == "FINISHED"
    assert run.data.params["encoder"] == "sage"
    assert run.data.params["cpus_per_worker"] == "2"  # the local Ray's CPUs, all to one worker
    assert 0.0 < run.data.metrics["final/test_hits_20"] <= 1.0
    assert 0.0 < run.data.metrics["final/valid_hits_20"] <= 1.0
    losses = [m.value for m in client.get_metric_history(run.info.run_id, "train_loss")]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_collab_paper_preset_runs_walks_years_and_validation_edges(
    ray_session, mlflow_store, tmp_path,
):
    from tests.standin import write_collab_standin

    root = write_collab_standin(tmp_path / "data")
    argv = ["--dataset", "collab", "--preset", "paper", "--yes", "--data-root", str(root), *STANDIN,
            "--set", "min_train_year=2005"]
    assert main(argv) == 0
    _, run, _ = only_run(mlflow_store, "plnlp-collab")
    assert run.data.params["loss"] == "weighted_hinge_auc"
    assert run.data.params["valid_as_input"] == "True"
    assert 0.0 <= run.data.metrics["final/test_hits_50"] <= 1.0


def test_citation2_paper_preset_reports_mrr(ray_session, mlflow_store, tmp_path):
    from tests.standin import write_citation2_standin

    root = write_citation2_standin(tmp_path / "data")
    assert main(["--dataset", "citation2", "--preset", "paper", "--yes", "--data-root", str(root),
                 *STANDIN]) == 0
    client, run, _ = only_run(mlflow_store, "plnlp-citation2")
    assert run.data.params["sampler"] == "local"
    assert 0.0 < run.data.metrics["final/test_mrr"] <= 1.0
    assert len(client.get_metric_history(run.info.run_id, "valid_mrr")) == 3
