"""``--resume RUN_ID``: a stopped or failed run goes on from its latest
checkpoint, in the same MLflow run, with the settings it was started with."""
import dataclasses
import json
from pathlib import Path

import mlflow
import yaml
from mlflow.entities import Run
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from components.recording.metric_names import run_metrics
from components.storage.location import location
from components.training.checkpoints import CHECKPOINTS_TAG, SHAPES_FILE
from pipelines.planning.presets import parse_overrides
from pipelines.planning.request import GraphSource, RunPlan, RunRequest
from pipelines.runtime.mlflow_store import check_tracking_store
from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.errors import PLNLPError


def resumed_run(request: RunRequest, source: GraphSource) -> RunPlan:
    """Looks ``request.resume`` up and checks that it can go on: the
    tracking store answers, the run exists, has not finished, trained
    ``source``'s graph, and its checkpoint fits the model its settings
    build. The plan goes on with the run's settings and preset, and
    ``--set`` on top."""
    check_tracking_store(mlflow.get_tracking_uri())
    client = MlflowClient()
    run_id = request.resume
    run = _get_run(client, run_id)
    trained = run.data.params.get("dataset")
    if trained != source.info.name:
        raise PLNLPError(f"run {run_id} trained {trained}, not {source.info.name}; "
                         f"resume it with --dataset {trained}.")
    if run.info.status == "FINISHED":
        raise PLNLPError(f"run {run_id} has already finished; start a new run instead "
                         "of --resume.")
    settings = yaml.safe_load(Path(client.download_artifacts(run_id, "config.yaml"))
                              .read_text())
    config = PLNLPConfig.from_mapping({**settings, **parse_overrides(request.overrides)})
    info = config.validate(source.info if source.path is not None else None)
    request = dataclasses.replace(request, preset=run.data.params.get("preset", request.preset))
    resumed = RunPlan(request, config, source, run_id, int(run.data.params.get("runs", 1)))
    if resumed.runs > 1:
        _read_children(client, run, resumed)
    for resumed_id in [run_id, *resumed.children.values()]:
        _check_shapes(client.get_run(resumed_id), config, info)
    return resumed


def _get_run(client: MlflowClient, run_id: str) -> Run:
    try:
        return client.get_run(run_id)
    except MlflowException as error:
        raise PLNLPError(f"there is no MLflow run {run_id} at {mlflow.get_tracking_uri()}; "
                         "give --resume the id of a run of this tracking store (see mlflow "
                         "ui), or set MLFLOW_TRACKING_URI to the store that holds it.") from error


def _read_children(client: MlflowClient, parent: Run, resumed: RunPlan) -> None:
    children = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    for child in children:
        seed = int(child.data.params["seed"])
        resumed.children[seed] = child.info.run_id
        if child.info.status == "FINISHED":
            resumed.finished[seed] = {key: value for key, value
                                      in run_metrics(child.data.metrics).items()
                                      if key.startswith("final_")}


def _check_shapes(run: Run, config: PLNLPConfig, info: object) -> None:
    """Refuses a checkpoint whose parameters have other shapes than the
    model ``config`` builds (a ``--set`` that changed a size)."""
    checkpoint = _latest_shapes(run)
    if checkpoint is None:
        return
    saved = checkpoint["shapes"]
    model = build_model(config, info, checkpoint["num_nodes"])
    built = {name: list(value.shape) for name, value in model.state_dict().items()}
    if built != saved:
        differ = sorted(k for k in built.keys() | saved.keys() if built.get(k) != saved.get(k))
        raise PLNLPError(f"the checkpoint of run {run.info.run_id} holds a model of another "
                         f"shape ({', '.join(differ[:3])} differ); resume without --set "
                         "changes to sizes, or start a new run.")


def _latest_shapes(run: Run) -> dict | None:
    """The parameter shapes of the run's latest checkpoint, if it has one."""
    storage = run.data.tags.get(CHECKPOINTS_TAG)
    if not storage:
        return None
    folder = location(storage)
    found = sorted(((info.mtime_ns, name) for name, info in folder.files().items()
                    if name.rsplit("/", 1)[-1] == SHAPES_FILE), key=lambda item: item[0])
    return json.loads((folder / found[-1][1]).read_text()) if found else None
