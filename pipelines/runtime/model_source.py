"""Which trained model a ``--model`` URI names, refused in one sentence when
there is none: ``runs:/<run id>/model``, ``models:/<name>@<alias>``,
``models:/<name>/<version>`` or ``models:/<model id>`` (MLflow 3's logged
model). Loading a model runs the code logged with it
(see :mod:`components.recording.served_model`): load only models from one's own
tracking server."""
import re

from components.recording.model_export import MODEL_ARTIFACT, logged_model_uri
from components.recording.reads import (
    ELSEWHERE,
    child_runs,
    find_run,
    has_logged_model,
    load_python_model,
    model_versions,
    registered_model,
    registered_model_names,
    tracking_uri,
)
from components.recording.tracking_store import check_store_exists
from plnlp_core.errors import PLNLPError
from plnlp_core.scoring.link_scorer import LinkScorer

_RUN = re.compile(r"^runs:/(?P<run>[^/]+)/(?P<path>.+)$")
_ALIAS = re.compile(r"^models:/(?P<name>[^@/]+)@(?P<alias>.+)$")
_VERSION = re.compile(r"^models:/(?P<name>[^@/]+)/(?P<version>\d+)$")
_LOGGED = re.compile(r"^models:/(?P<id>m-[0-9a-f]+)$")


def load_scorer(uri: str) -> LinkScorer:
    """The :class:`LinkScorer` of the model ``uri`` names (see :func:`check_model_uri`)."""
    check_model_uri(uri)
    return load_python_model(uri).scorer


def check_model_uri(uri: str) -> None:
    """Refuses a URI that names no PLNLP model: a malformed one, an unknown
    run, a heuristic's run, a run of several seeds, an unknown registered
    name, alias or version; a local store that does not exist is refused
    before MLflow would create it."""
    check_store_exists(tracking_uri())
    if match := _LOGGED.match(uri):
        _check_logged(match["id"])
    elif match := _RUN.match(uri):
        _check_run(match["run"], match["path"])
    elif match := _ALIAS.match(uri):
        _check_alias(match["name"], match["alias"])
    elif match := _VERSION.match(uri):
        _check_version(match["name"], match["version"])
    else:
        raise PLNLPError(f"--model {uri!r} is not a model URI; give runs:/<run id>/model, "
                         "models:/<name>@<alias>, models:/<name>/<version> or "
                         "models:/<model id>.")


def _check_run(run_id: str, path: str) -> None:
    run = find_run(run_id, "copy the run id from the run's summary or the MLflow UI")
    kind = run.data.params.get("model", "plnlp")
    if kind != "plnlp":
        raise PLNLPError(f"run {run_id} scored pairs with {kind}, which has no model to load; "
                         "give the run of a trained PLNLP model.")
    if path != MODEL_ARTIFACT:
        raise PLNLPError(f"runs keep their model at runs:/{run_id}/{MODEL_ARTIFACT}, not "
                         f"{path!r}.")
    if logged_model_uri(run_id) is not None:
        return
    seeds = child_runs(run_id, run.info.experiment_id)
    if seeds:
        raise PLNLPError(f"run {run_id} trained {len(seeds)} seeds, each with its own model; "
                         f"give one of theirs, e.g. runs:/{seeds[0].info.run_id}/model, or "
                         "register the best with --register.")
    raise PLNLPError(f"run {run_id} has no model (status {run.info.status}): only a finished "
                     "run logs one; train it to the end, or --resume it.")


def _check_logged(model_id: str) -> None:
    if not has_logged_model(model_id):
        raise PLNLPError(f"there is no logged model {model_id} in {tracking_uri()}; "
                         f"copy its id from the run's Artifacts or Models tab, {ELSEWHERE}.")


def _check_alias(name: str, alias: str) -> None:
    model = _registered(name)
    if alias not in model.aliases:
        known = ", ".join(sorted(model.aliases)) or "none"
        raise PLNLPError(f"registered model {name!r} has no alias {alias!r} (its aliases: "
                         f"{known}); use one of them or models:/{name}/<version>.")


def _check_version(name: str, version: str) -> None:
    _registered(name)
    versions = model_versions(name)
    if int(version) not in versions:
        raise PLNLPError(f"registered model {name!r} has no version {version} (it has "
                         f"{', '.join(map(str, versions)) or 'none'}).")


def _registered(name: str) -> object:
    model = registered_model(name)
    if model is None:
        names = ", ".join(registered_model_names()) or "none"
        raise PLNLPError(f"there is no registered model {name!r} in {tracking_uri()} "
                         f"(registered: {names}); register one with pipelines/run.py "
                         f"--register NAME, {ELSEWHERE}.")
    return model
