"""The Kubeflow pipeline run here by kfp's local runner, each step a
subprocess (``pipelines/kubeflow.py --run-local``)."""
import logging
import os
import warnings
from pathlib import Path

from kfp import local

from pipelines.runtime.kubeflow.cluster import ClusterSettings
from pipelines.runtime.kubeflow.graph import build_pipeline

REPO_ROOT = Path(__file__).resolve().parents[3]


def run_local(arguments: dict[str, object], pipeline_root: Path) -> dict[str, float]:
    """Runs the pipeline here, each step a subprocess of this Python with the
    repository on its ``PYTHONPATH``; returns the evaluate step's metrics.
    The steps share one Ray: ``RAY_ADDRESS``'s, else a local Ray started
    here for the run (one start instead of one per step)."""
    import ray

    from components.ray_cleanup import cleaned_up
    from pipelines.runtime.environment import changed_environment
    from pipelines.runtime.ray_cluster import connect_ray

    local.init(runner=local.SubprocessRunner(use_venv=False),
               pipeline_root=str(pipeline_root.resolve()))
    python_path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    started = not ray.is_initialized()
    with changed_environment({"PYTHONPATH": python_path}):  # restored afterwards
        connect_ray(logging.WARNING)  # its workers inherit the PYTHONPATH too
        os.environ["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address
        try:
            with warnings.catch_warnings():  # the image's name, the GPU limit: no matter here
                warnings.filterwarnings("ignore", "You may be attemping", RuntimeWarning)
                warnings.filterwarnings("ignore", ".*no effect in the current local runner")
                outputs = dict(build_pipeline(ClusterSettings())(**arguments).output.metadata)
        except KeyboardInterrupt:  # a Ray that ended with the process group never answers
            if started:
                cleaned_up(ray.shutdown)
            raise
        if started:
            ray.shutdown()
        return outputs
