"""The Kubeflow pipeline's graph: load -> augment -> train -> evaluate, and
the sweep when a space is given, each step with the cluster's requests."""
import os

from kfp import dsl
from kfp.dsl import Metrics

from pipelines.runtime.kubeflow.cluster import STEP_ENV, ClusterSettings
from pipelines.runtime.kubeflow.kfp_components import augment, evaluate, load, sweep, train

GPU = "nvidia.com/gpu"


def build_pipeline(cluster: ClusterSettings) -> object:
    """The pipeline, its steps asking ``cluster``'s resources (kfp builds
    a pipeline's spec where it is defined, hence one definition per
    setting)."""

    @dsl.pipeline(name="plnlp", description="PLNLP link prediction: load -> augment -> train -> "
                                            "evaluate, and an optional sweep.")
    def plnlp(
        dataset: str = "ddi", preset: str = "", overrides: list[str] = [],  # noqa: B006 (kfp's default)
        data_root: str = "", work_dir: str = "", experiment: str = "", num_workers: int = 1,
        cpus_per_worker: int = 1, gpus: int = 0, max_failures: int = 3, yes: bool = False,
        sweep_space: str = "", num_samples: int = 0,
    ) -> Metrics:
        """The parameters are ``pipelines/run.py``'s flags (``overrides`` its
        ``--set KEY=VALUE``; "" its defaults); ``gpus`` > 0 gives the train and
        sweep steps that many GPUs and ``--use-gpu``. A ``sweep_space`` (a
        ``tune_spaces/`` file) also runs the sweep."""
        # No step is cached by Kubeflow: the stage cache reuses what load and augment made, and
        # train, evaluate and sweep record to MLflow.
        loaded = load(dataset=dataset, data_root=data_root, work_dir=work_dir)
        splits = loaded.outputs["splits"]
        augmented = augment(splits=splits, dataset=dataset, preset=preset, overrides=overrides,
                            work_dir=work_dir, yes=yes)
        walks = augmented.outputs["walks"]
        trained = train(splits=splits, walks=walks, dataset=dataset, preset=preset,
                        overrides=overrides, work_dir=work_dir, num_workers=num_workers,
                        cpus_per_worker=cpus_per_worker, gpus=gpus, max_failures=max_failures,
                        experiment=experiment, yes=yes)
        trained.set_accelerator_type(GPU).set_accelerator_limit(gpus)
        evaluated = evaluate(splits=splits, model=trained.outputs["model"],
                             mlflow_run_id=trained.outputs["mlflow_run_id"], experiment=experiment)
        with dsl.If(sweep_space != "", name="sweep-requested"):
            searched = sweep(dataset=dataset, space=sweep_space, overrides=overrides,
                             data_root=data_root, work_dir=work_dir, num_samples=num_samples,
                             gpus=gpus)
            searched.set_accelerator_type(GPU).set_accelerator_limit(gpus)
        steps = {"load": loaded, "augment": augmented, "train": trained, "evaluate": evaluated,
                 "sweep": searched}
        for name, task in steps.items():
            task.set_caching_options(enable_caching=False)
            for variable in STEP_ENV:
                if os.environ.get(variable):
                    task.set_env_variable(variable, os.environ[variable])
            cluster.apply(name, task)
        return evaluated.outputs["metrics"]

    return plnlp
