"""The commands leave the home folder as they found it: on a cluster a job's
``HOME`` may be shared, read-only or throwaway, and a batch job has nothing
to keep there. (Matplotlib's cache goes to the node's scratch folder, see
:mod:`components.recording.plots`.)"""
import os


def keep_home_clean() -> None:
    """MLflow's usage telemetry, which keeps an installation id under
    ``~/.config/mlflow``, is off unless the user chose
    (``MLFLOW_DISABLE_TELEMETRY``)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
