"""The Kubeflow form of the pipeline: it compiles, runs end to end with
kfp's local runner, and the KubeRay manifests start commands the CLIs take."""
import json
import shlex
from pathlib import Path

import mlflow
import pytest
import yaml
from mlflow.tracking import MlflowClient

from components.recording.metric_names import run_metrics
from components.recording.model_export import logged_model_uri
from pipelines.kubeflow import main
from pipelines.planning.arguments import run_request, sweep_request
from pipelines.planning.run_plan import plan_run
from pipelines.runtime.kubeflow.cluster import cluster_problems

REPO_ROOT = Path(__file__).resolve().parents[2]
IMAGE_REPO = "/app"
STAGES = ("load", "augment", "train", "evaluate")
GIN = "examples.link_parts.layers:GINLayer"
HADAMARD = "examples.link_parts.predictors:HadamardDistanceMLP"
TINY = ["--set", "embedding_dim=8", "--set", "hidden_channels=8", "--set", "predictor_hidden=8",
        "--set", "batch_size=64", "--set", "epochs=2"]


def test_pipeline_compiles_to_yaml_naming_the_four_stages_and_the_sweep(tmp_path):
    assert main(["--compile", str(tmp_path / "plnlp.yaml")]) == 0
    spec = yaml.safe_load((tmp_path / "plnlp.yaml").read_text())
    assert spec["pipelineInfo"]["name"] == "plnlp"
    tasks = spec["root"]["dag"]["tasks"]
    assert set(STAGES) <= set(tasks)
    condition = next(task for task in tasks.values() if "sweep_space" in
                     task.get("triggerPolicy", {}).get("condition", ""))
    sweep_dag = spec["components"][condition["componentRef"]["name"]]["dag"]["tasks"]
    assert "sweep" in sweep_dag
    assert tasks["evaluate"]["inputs"]["artifacts"]["model"]["taskOutputArtifact"] == {
        "outputArtifactKey": "model", "producerTask": "train"}
    executors = spec["deploymentSpec"]["executors"]
    assert {f"exec-{name}" for name in (*STAGES, "sweep")} <= set(executors)


@pytest.mark.slow  # the whole command, compiling: 4 s
def test_compiling_for_a_cluster_warns_of_a_default_image_and_a_tracking_store_no_pod_sees(
        tmp_path, monkeypatch, capsys):
    for name in ("PLNLP_IMAGE", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    assert main(["--compile", str(tmp_path / "plnlp.yaml")]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warned) == 3 and "PLNLP_IMAGE is unset" in warned[0]
    assert "MLFLOW_TRACKING_URI is unset" in warned[1] and "no --cache-volume" in warned[2]
    assert cluster_problems({"MLFLOW_TRACKING_URI": "http://mlflow:5000", "PLNLP_IMAGE": "x"},
                            None, "s3://bucket/plnlp") == []  # object storage needs no volume
    assert len(cluster_problems({"MLFLOW_TRACKING_URI": "http://mlflow:5000", "PLNLP_IMAGE": "x"},
                                None, "file:///tmp/plnlp")) == 1  # a local folder does
    assert cluster_problems({"MLFLOW_TRACKING_URI": "sqlite:////tmp/m.db", "PLNLP_IMAGE": "x"},
                            "cache") \
        == ["MLFLOW_TRACKING_URI=sqlite:////tmp/m.db is a store on this machine, which no pod "
            "sees; set it to your tracking server."]
    assert cluster_problems({"MLFLOW_TRACKING_URI": "http://mlflow:5000", "PLNLP_IMAGE": "x"},
                            "cache") == []
    for uri in ("http://127.0.0.1:5000", "http://localhost:5000", "https://[::1]:5000"):
        (warned,) = cluster_problems({"MLFLOW_TRACKING_URI": uri, "PLNLP_IMAGE": "x"}, "cache")
        assert warned.startswith(f"MLFLOW_TRACKING_URI={uri} points at this machine, and in a "
                                 "pod ")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert main(["--compile", str(tmp_path / "plnlp.yaml")]) == 0
    assert "warning: MLFLOW_TRACKING_URI=http://127.0.0.1:5000 points at this machine" \
        in capsys.readouterr().err


@pytest.mark.slow  # the whole command, compiling: 3 s
def test_compiled_steps_request_cpus_memory_a_cache_volume_and_a_secret(tmp_path):
    argv = ["--compile", str(tmp_path / "plnlp.yaml"), "--num-workers", "2",
            "--cpus-per-worker", "3", "--memory", "12Gi", "--cache-volume", "plnlp-cache",
            "--secret", "plnlp-credentials"]
    assert main(argv) == 0
    spec, platform = yaml.safe_load_all((tmp_path / "plnlp.yaml").read_text())
    executors = spec["deploymentSpec"]["executors"]
    resources = {name: executors[f"exec-{name}"]["container"]["resources"]
                 for name in (*STAGES, "sweep")}
    assert {name: r["cpuRequest"] for name, r in resources.items()} == {
        "load": 1, "augment": 3, "train": 7, "evaluate": 3, "sweep": 4}
    assert {r["memoryRequest"] for r in resources.values()} == {12 * 2**30 / 1e9}
    kubernetes = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for name in (*STAGES, "sweep"):
        (mount,) = kubernetes[f"exec-{name}"]["pvcMount"]
        assert mount["mountPath"] == "/plnlp-cache"
        assert mount["pvcNameParameter"]["runtimeValue"]["constant"] == "plnlp-cache"
        (secret,) = kubernetes[f"exec-{name}"]["secretAsEnv"]
        assert secret["optional"] and {"MLFLOW_TRACKING_TOKEN", "RAY_AUTH_TOKEN"} <= {
            pair["envVar"] for pair in secret["keyToEnv"]}
        env = {e["name"]: e["value"] for e in executors[f"exec-{name}"]["container"]["env"]}
        assert env["PLNLP_CACHE_DIR"] == "/plnlp-cache"


def test_a_work_folder_in_object_storage_flows_into_the_compiled_pipeline_with_its_keys(
        tmp_path):
    argv = ["--compile", str(tmp_path / "plnlp.yaml"), "--work-dir", "s3://bucket/plnlp",
            "--data-root", "s3://bucket/ogb", "--secret", "plnlp-store"]
    assert main(argv) == 0
    spec, platform = yaml.safe_load_all((tmp_path / "plnlp.yaml").read_text())
    parameters = spec["root"]["inputDefinitions"]["parameters"]
    assert parameters["work_dir"]["defaultValue"] == "s3://bucket/plnlp"
    assert parameters["data_root"]["defaultValue"] == "s3://bucket/ogb"
    kubernetes = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for name in (*STAGES, "sweep"):
        (secret,) = kubernetes[f"exec-{name}"]["secretAsEnv"]
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL"} <= {
            pair["envVar"] for pair in secret["keyToEnv"]}


@pytest.mark.slow  # the whole command, compiling four times: 5 s
def test_the_compiled_defaults_run_on_the_pods_they_get(tmp_path, capsys):
    def defaults(*flags: str) -> dict:
        assert main(["--compile", str(tmp_path / "plnlp.yaml"), *flags]) == 0
        spec = next(yaml.safe_load_all((tmp_path / "plnlp.yaml").read_text()))
        return {name: parameter.get("defaultValue") for name, parameter
                in spec["root"]["inputDefinitions"]["parameters"].items()}

    on_cpus = defaults()  # ddi's paper preset would be refused on a pod without a GPU
    assert (on_cpus["dataset"], on_cpus["preset"], on_cpus["gpus"]) == ("ddi", "cpu", 0)
    on_gpus = defaults("--use-gpu", "--num-workers", "2")
    assert (on_gpus["preset"], on_gpus["gpus"]) == ("paper", 2)
    assert "runs with the defaults train ddi's paper preset" in capsys.readouterr().out


def test_the_compiled_pipeline_names_the_parts_of_ones_own_and_what_its_image_must_hold(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PLNLP_IMAGE", "registry.example/plnlp:lab")
    assert main(["--compile", str(tmp_path / "plnlp.yaml"), "--set", f"encoder={GIN}",
                 "--set", "encoder_options.eps=0.1"]) == 0
    spec = next(yaml.safe_load_all((tmp_path / "plnlp.yaml").read_text()))
    assert spec["root"]["inputDefinitions"]["parameters"]["overrides"]["defaultValue"] == [
        f"encoder={GIN}", "encoder_options.eps=0.1"]
    assert (f"warning: the steps import encoder {GIN}, so the image registry.example/plnlp:lab "
            "must hold its package") in capsys.readouterr().err


def test_unknown_preset_is_refused_in_one_sentence_before_any_step(capsys):
    assert main(["--run-local", "--dataset", "ddi", "--preset", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown preset 'nope'") and "\n" not in err


@pytest.mark.slow
def test_pipeline_runs_locally_on_the_ddi_standin_into_one_finished_mlflow_run(
    ray_session, mlflow_store, standin_root, tmp_path, capsys,
):
    # Each step is a subprocess; they all join the suite's Ray.
    outputs = tmp_path / "kfp"
    argv = ["--run-local", "--dataset", "ddi", "--preset", "smoke", "--data-root",
            str(standin_root), "--pipeline-root", str(outputs), "--set", "walk_length=3",
            "--set", "loss=weighted_hinge_auc", "--set", "heart_negatives=8", *TINY,
            "--set", f"encoder={GIN}", "--set", f"predictor={HADAMARD}"]
    assert main(argv) == 0
    client = MlflowClient(mlflow_store)
    runs = client.search_runs([client.get_experiment_by_name("plnlp-ddi").experiment_id])
    assert len(runs) == 1
    run_ = runs[0]
    assert run_.info.status == "FINISHED"
    assert run_.data.params["embedding_dim"] == "8" and run_.data.params["walk_length"] == "3"
    assert 0.0 <= run_.data.metrics["final/test_hits_20"] <= 1.0
    assert 0.0 <= run_.data.metrics["final/valid_hits_20"] <= 1.0
    history = client.get_metric_history(run_.info.run_id, "valid_hits_20")
    assert [m.step for m in history] == [1, 2]
    assert "checkpoint/model.pt" in {
        a.path for a in client.list_artifacts(run_.info.run_id, "checkpoint")}
    assert logged_model_uri(run_.info.run_id) is not None  # the evaluate step logs the model
    assert (run_.data.params["encoder"], run_.data.params["predictor"]) == (GIN, HADAMARD)
    assert run_.data.params["encoder_version"].startswith("sha256:")
    model = Path(mlflow.artifacts.download_artifacts(logged_model_uri(run_.info.run_id)))
    assert (model / "code" / "examples" / "link_parts" / "predictors.py").is_file()
    (run_dir,) = outputs.iterdir()
    assert {"model.pt", "config.yaml"} <= {p.name for p in (run_dir / "train" / "model").iterdir()}
    assert list((run_dir / "augment" / "walks").glob("round-0000/*.parquet"))
    output = json.loads((run_dir / "evaluate" / "executor_output.json").read_text())
    (metrics,) = output["artifacts"]["metrics"]["artifacts"]
    finals = {k: v for k, v in run_metrics(run_.data.metrics).items() if k.startswith("final_")}
    assert metrics["metadata"] == pytest.approx(finals)
    assert len(finals) == 6 + 14 + 14  # OGB's, HeaRT's, HeaRT's ceiling
    assert 1 / 9 <= finals["final_test_heart_mrr"] <= 1.0
    assert finals["final_test_heart_mrr"] <= finals["final_test_heart_ceiling_mrr"] + 1e-6
    assert f"final_test_hits_20 {finals['final_test_hits_20']:.4f}" in capsys.readouterr().out


@pytest.mark.parametrize("manifest", ["rayjob.yaml", "rayjob-sweep.yaml"])
def test_rayjob_manifest_has_a_gpu_worker_group_and_an_entrypoint_the_cli_takes(manifest):
    job = yaml.safe_load((REPO_ROOT / "deploy" / manifest).read_text())
    assert job["kind"] == "RayJob"
    cluster = job["spec"]["rayClusterSpec"]
    limits = [container["resources"]["limits"]
              for group in cluster["workerGroupSpecs"]
              for container in group["template"]["spec"]["containers"]]
    assert any(int(limit.get("nvidia.com/gpu", 0)) >= 1 for limit in limits)
    env = {var["name"] for container in cluster["headGroupSpec"]["template"]["spec"]["containers"]
           for var in container.get("env", [])}
    assert "MLFLOW_TRACKING_URI" in env
    python, script, *argv = shlex.split(job["spec"]["entrypoint"])
    script = Path(script).relative_to(IMAGE_REPO)  # the repository's place in deploy/Dockerfile
    assert python == "python" and (REPO_ROOT / script).is_file()
    if script.name == "run.py":
        request = run_request(argv)
        assert request.dataset == "ddi"
        assert request.workers.use_gpu
        assert plan_run(request).config.hidden_channels == 512  # the paper preset
    else:
        args = sweep_request(argv)
        assert args.dataset == "ddi"
        assert args.gpus_per_worker == 1
        assert (REPO_ROOT / args.space.relative_to(IMAGE_REPO)).is_file()
