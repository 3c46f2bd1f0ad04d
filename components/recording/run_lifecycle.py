"""Opening, tagging and ending MLflow runs and experiments: every run a
command, a seed or a sweep's trial records into starts and ends here."""
import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from components.recording.tags import EXPERIMENT_KIND_TAG

ActiveRun = mlflow.ActiveRun  # what start_run returns, for annotations elsewhere


def use_tracking_uri(uri: str) -> None:
    """Records to and reads from the tracking store ``uri`` (a process of its
    own, such as a sweep's trial, starts without the driver's)."""
    mlflow.set_tracking_uri(uri)


def open_experiment(name: str, artifact_location: str | None = None) -> str:
    """Makes ``name`` MLflow's active experiment, creating it with its
    artifacts at ``artifact_location`` (MLflow's default when ``None``) if
    it is new; returns its id. Commands started together may each find it
    new: the one that creates it second goes on with the first's."""
    if mlflow.get_experiment_by_name(name) is None:
        try:
            mlflow.create_experiment(name, artifact_location=artifact_location)
        except MlflowException as error:
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
    return mlflow.set_experiment(name).experiment_id


TRAINING_EXPERIMENT = "custom_model_development"


def mark_training_experiment(experiment_id: str) -> None:
    """Tags the experiment as a classic training one, so that the UI opens
    on its runs table, not on GenAI traces. Commands started together may
    each find the tag missing: a server whose database refuses the second
    write of it (PostgreSQL's duplicate key) is answered by the first's."""
    client = MlflowClient()
    if client.get_experiment(experiment_id).tags.get(EXPERIMENT_KIND_TAG) == TRAINING_EXPERIMENT:
        return
    try:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, TRAINING_EXPERIMENT)
    except MlflowException:
        tags = client.get_experiment(experiment_id).tags
        if tags.get(EXPERIMENT_KIND_TAG) != TRAINING_EXPERIMENT:
            raise


def start_run(
    run_id: str | None = None, run_name: str | None = None, experiment_id: str | None = None,
    nested: bool = False, parent_run_id: str | None = None, tags: dict[str, str] | None = None,
) -> mlflow.ActiveRun:
    """Starts a new run (named ``run_name``, a child of the active run when
    ``nested`` or of ``parent_run_id``) or goes on with ``run_id``, as
    ``mlflow.start_run`` does; a ``with`` block ends it."""
    return mlflow.start_run(run_id=run_id, run_name=run_name, experiment_id=experiment_id,
                            nested=nested, parent_run_id=parent_run_id, tags=tags)


def end_run(status: str = "FINISHED", tags: dict[str, object] | None = None) -> None:
    """Ends the innermost active run with ``status``, tagged with ``tags``."""
    if tags:
        mlflow.set_tags(tags)
    mlflow.end_run(status=status)


def end_other_run(run_id: str, status: str, tags: dict[str, str]) -> None:
    """Ends a run that is not active in this process (a sweep's trial, a
    seed) with ``status``, tagged with ``tags``."""
    client = MlflowClient()
    for key, value in tags.items():
        client.set_tag(run_id, key, value)
    client.set_terminated(run_id, status=status)


def tag_run(key: str, value: str) -> None:
    """Tags the active run."""
    mlflow.set_tag(key, value)


def untag_run(key: str) -> None:
    """Removes a tag of the active run."""
    mlflow.delete_tag(key)
