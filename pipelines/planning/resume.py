"""``--resume RUN_ID``: a stopped or failed run goes on from its latest
checkpoint, in the same MLflow run, with the settings it was started with,
its dataset, data root and work folder: the run id (and the tracking URI)
is all it needs, from any folder."""
import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

from components.recording.driver_presence import refuse_a_driven_run
from components.recording.metric_names import run_metrics
from components.recording.reads import (
    Run,
    child_runs,
    experiment_name,
    find_run,
    get_run,
    run_settings,
    tracking_uri,
)
from components.recording.tags import CHECKPOINTS_TAG, DATA_ROOT_TAG, DATASET_TAG, WORK_DIR_TAG
from components.recording.tracking_store import check_tracking_store
from components.storage.location import Location, is_uri
from components.train.checkpoint_writer import SHAPES_FILE
from pipelines.planning.presets import parse_overrides
from pipelines.planning.request import GraphSource, RunPlan, RunRequest
from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import data_root_setting
from plnlp_core.errors import PLNLPError
from plnlp_core.preflight.checks import check_config


def resumed_run(request: RunRequest, graph: Callable[[str], GraphSource]) -> RunPlan:
    """Looks ``request.resume`` up and checks that it can go on: the
    tracking store answers, the run exists, has not finished, trained the
    graph ``--dataset`` names (by default the run's own, which ``graph``
    reads), is in the ``--experiment`` given, and its checkpoint fits the
    model its settings build. The plan goes on in the run's experiment,
    with its settings and preset and ``--set`` on top, its data root and
    work folder unless given (the data is the same wherever it is read
    from), and its checkpoints. Looking it up changes nothing in MLflow."""
    check_tracking_store(tracking_uri())
    if not request.verbose:  # MLflow's bars for the download of config.yaml
        os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    run_id = request.resume
    run = find_run(run_id, "give --resume the id of a run of this tracking store (see mlflow ui)")
    tags = run.data.tags
    trained = run.data.params.get("dataset")
    source = graph(request.dataset or tags.get(DATASET_TAG) or trained or "")
    if trained != source.info.name:
        raise PLNLPError(f"run {run_id} trained {trained}, not {source.info.name}; "
                         f"resume it with --dataset {trained}.")
    if run.info.status == "FINISHED":
        raise PLNLPError(f"run {run_id} has already finished; start a new run instead "
                         "of --resume.")
    refuse_a_driven_run(run)
    experiment = experiment_name(run.info.experiment_id)
    if request.experiment not in (None, experiment):
        raise PLNLPError(f"run {run_id} is in experiment {experiment!r}, not "
                         f"{request.experiment!r}; drop --experiment to go on with it there.")
    settings = run_settings(run_id)
    config = PLNLPConfig.from_mapping({**settings, **parse_overrides(request.overrides)})
    info = check_config(config, source.info if source.path is not None else None)
    request = dataclasses.replace(
        request, dataset=request.dataset or tags.get(DATASET_TAG) or trained,
        preset=run.data.params.get("preset", request.preset), experiment=experiment,
        data_root=request.data_root or _usable_root(tags.get(DATA_ROOT_TAG), source),
        work_dir=request.work_dir or tags.get(WORK_DIR_TAG))
    resumed = RunPlan(request, config, source, run_id, int(run.data.params.get("runs", 1)))
    if resumed.runs > 1:
        _read_children(run, resumed)
    runs = [get_run(resumed_id) for resumed_id in [run_id, *resumed.children.values()]]
    for each in runs:
        _check_shapes(each, config, info)
    _check_data(run_id, source, request.data_root)
    kept = [each.data.tags[CHECKPOINTS_TAG] for each in runs if CHECKPOINTS_TAG in each.data.tags]
    resumed.checkpoints = Location(kept[0]).parent.uri if kept else None
    return resumed


def _usable_root(recorded: str | None, source: GraphSource) -> str | None:
    """The data root the run recorded, unless it is a local folder that
    does not hold its dataset here (another machine's: ``PLNLP_DATA_ROOT``
    or ``./data`` then, as for a new run)."""
    if recorded is None or is_uri(recorded) or source.path is not None \
            or (Path(recorded) / source.info.dir_name).is_dir():
        return recorded
    return None


def _check_data(run_id: str, source: GraphSource, data_root: str | None) -> None:
    """Refuses, before the run is touched, a local data root without the
    run's OGB dataset (the load stage would fail the run it goes on with)."""
    root = data_root_setting(data_root)
    if source.path is not None or is_uri(root) or (Path(root) / source.info.dir_name).is_dir():
        return
    raise PLNLPError(f"run {run_id} cannot go on: {Path(root).resolve()} holds no "
                     f"{source.info.dir_name} folder here; give --data-root the folder that holds "
                     "it (or set PLNLP_DATA_ROOT).")


def _read_children(parent: Run, resumed: RunPlan) -> None:
    for child in child_runs(parent.info.run_id, parent.info.experiment_id):
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
    folder = Location(storage)
    found = sorted(((info.mtime_ns, name) for name, info in folder.files().items()
                    if name.rsplit("/", 1)[-1] == SHAPES_FILE), key=lambda item: item[0])
    return json.loads((folder / found[-1][1]).read_text()) if found else None
