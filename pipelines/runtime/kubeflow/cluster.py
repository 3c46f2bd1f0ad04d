"""What the Kubeflow pipeline's pods get from a cluster: the image every step
runs, the environment and credentials passed to each step, the CPU, memory
and volume each pod requests (:class:`ClusterSettings`), and what a compiled
pipeline would get wrong on a cluster (:func:`cluster_problems`)."""
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from components.storage.location import is_uri

if TYPE_CHECKING:  # kfp takes 0.7 s to import: the command's --help needs none of it
    from kfp import dsl

BASE_IMAGE = os.environ.get("PLNLP_IMAGE", "plnlp:latest")
# Host names that mean "this machine" (in a pod, the pod).
LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0")
# Given to every step as the shell that compiles (or runs) the pipeline has them.
STEP_ENV = ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "PLNLP_DATA_ROOT", "PLNLP_CACHE_DIR")
# Read from --secret's Secret into every step, each only where the Secret has it.
SECRET_KEYS = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
               "RAY_AUTH_TOKEN",
               # object storage as --work-dir or --data-root: S3 or an S3-compatible store
               # (MinIO), Azure Blob
               "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
               "AWS_ENDPOINT_URL", "AWS_REGION", "AZURE_STORAGE_ACCOUNT_NAME",
               "AZURE_STORAGE_ACCOUNT_KEY")
CACHE_MOUNT = "/plnlp-cache"


class ClusterSettings:
    """What each step's pod asks of a cluster, set by ``--compile``'s flags:
    CPU and memory requests (train: its worker group plus the Ray driver;
    evaluate and sweep: one worker's CPUs; load: one CPU), a
    PersistentVolumeClaim for the stage cache (``PLNLP_CACHE_DIR``), and a
    Secret whose MLflow, Ray and S3 credentials become environment
    variables (:data:`SECRET_KEYS`, each only where the Secret has it).
    kfp's local runner ignores them."""

    def __init__(self, num_workers: int = 1, cpus_per_worker: int = 1, memory: str = "8Gi",
                 cache_volume: str | None = None, secret: str | None = None) -> None:
        self.cpus = {"load": 1, "augment": cpus_per_worker,
                     "train": num_workers * cpus_per_worker + 1, "evaluate": cpus_per_worker,
                     "sweep": cpus_per_worker + 1}
        self.memory, self.cache_volume, self.secret = memory, cache_volume, secret

    def apply(self, step: str, task: "dsl.PipelineTask") -> None:
        """Sets the step ``step``'s requests, volume and Secret on ``task``."""
        from kfp import kubernetes

        task.set_cpu_request(str(self.cpus[step])).set_memory_request(self.memory)
        if self.cache_volume:
            kubernetes.mount_pvc(task, self.cache_volume, CACHE_MOUNT)
            task.set_env_variable("PLNLP_CACHE_DIR", CACHE_MOUNT)
        if self.secret:
            kubernetes.use_secret_as_env(task, self.secret, {key: key for key in SECRET_KEYS},
                                         optional=True)


def cluster_problems(environ: Mapping[str, str], cache_volume: str | None = None,
                     work_dir: str = "") -> list[str]:
    """What a pipeline compiled with ``environ`` would get wrong on a
    cluster, one sentence each: the default image, no tracking server, a
    tracking store local to each pod (lost with it) or a server's address
    that means this machine (in a pod, the pod), a stage cache in no object
    storage and on no volume."""
    problems = []
    if "PLNLP_IMAGE" not in environ:
        problems.append(f"PLNLP_IMAGE is unset, so every step runs the image {BASE_IMAGE}; "
                        "set it to the image your cluster pulls (see deploy/Dockerfile).")
    uri = environ.get("MLFLOW_TRACKING_URI", "")
    if not uri:
        problems.append("MLFLOW_TRACKING_URI is unset, so each pod records to a SQLite file of "
                        "its own that is lost with it; set it to your tracking server.")
    elif not uri.startswith(("http://", "https://", "databricks")):
        problems.append(f"MLFLOW_TRACKING_URI={uri} is a store on this machine, which no pod "
                        "sees; set it to your tracking server.")
    elif (urlsplit(uri).hostname or "") in LOOPBACK:
        problems.append(f"MLFLOW_TRACKING_URI={uri} points at this machine, and in a pod "
                        f"{urlsplit(uri).hostname} is the pod itself; set it to the tracking "
                        "server's address the pods reach (e.g. http://mlflow.<namespace>.svc:5000).")
    if cache_volume is None and not is_uri(work_dir):
        problems.append("no --work-dir in object storage and no --cache-volume, so each pod "
                        "caches its stage outputs where they are lost with it, and every run "
                        "loads and walks the graph again; give --work-dir s3://<bucket>/plnlp "
                        "(its keys through --secret) or a PersistentVolumeClaim every step can "
                        "mount.")
    return problems
