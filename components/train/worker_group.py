"""The Ray Train worker group a training run asks for."""
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Ray is imported only where a group is built
    import ray.train


@dataclass(frozen=True)
class WorkerGroup:
    """The DDP workers of one training run: ``num_workers`` workers, each
    holding ``cpus_per_worker`` CPUs (torch uses that many threads; ``None``
    until the run has sized it for its cluster) and, with ``use_gpu``,
    ``gpus_per_worker`` of a GPU (a fraction lets sweep trials share one)."""

    num_workers: int = 1
    cpus_per_worker: int | None = 1
    use_gpu: bool = False
    gpus_per_worker: float = 1.0

    def resources(self) -> dict[str, float]:
        """What the whole group holds of the cluster."""
        return {name: amount * self.num_workers for name, amount in self.per_worker().items()}

    def per_worker(self) -> dict[str, float]:
        gpus = {"GPU": self.gpus_per_worker} if self.use_gpu else {}
        return {"CPU": self.cpus_per_worker, **gpus}

    def scaling_config(self) -> "ray.train.ScalingConfig":
        import ray.train

        return ray.train.ScalingConfig(num_workers=self.num_workers, use_gpu=self.use_gpu,
                                       resources_per_worker=self.per_worker())
