"""A Kubeflow step's typed parameters as the request ``pipelines/run.py``'s
flags would make (no Ray, MLflow or torch); ``pipelines/kubeflow.py`` makes
its own from its flags, which it shares with ``run.py``
(:func:`pipelines.planning.arguments.shared_request`)."""
from components.train.worker_group import WorkerGroup
from pipelines.planning.request import RunRequest


def step_request(dataset: str, preset: str = "", overrides: list[str] | None = None,
                 num_workers: int = 1, cpus_per_worker: int = 1, gpus: int = 0,
                 **fields: object) -> RunRequest:
    """``preset`` "" is the dataset's default, ``gpus`` > 0 gives each
    worker a GPU, ``fields`` are :class:`RunRequest`'s own ("" is unset)."""
    workers = WorkerGroup(num_workers, cpus_per_worker, use_gpu=gpus > 0)
    given = {name: value for name, value in fields.items() if value != ""}
    return RunRequest(dataset=dataset, preset=preset or None, overrides=tuple(overrides or ()),
                      workers=workers, **given)
