"""What :func:`~plnlp_core.training.fitting.fit` needs to go on after an epoch,
so a run that stops can continue where it left off."""
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from plnlp_core.sampling import NegativeSampler

STATE_FILE = "state.pt"


@dataclass
class FitState:
    """The training state after ``epoch``.

    Attributes:
        epoch (int): The last epoch done.
        model (dict): The model's ``state_dict``.
        optimizer (dict): The optimiser's ``state_dict`` (Adam's moments).
        schedule (dict, optional): The learning-rate schedule's ``state_dict``.
        rng (dict): This worker's random states: the sampling generator's
            (``"sampler"``), torch's CPU one (``"torch"``, dropout on CPU)
            and the current CUDA device's (``"cuda"``) where there is one.
        sampler (dict): What this worker's negative sampler learned (the
            adversarial sampler's generator; empty for the others).
        best_epoch (int): The best validation epoch so far (0: none).
        best_metrics (dict): Its metrics.
        best_state (dict, optional): The model's ``state_dict`` then.
    """

    epoch: int
    model: dict[str, Tensor]
    optimizer: dict
    schedule: dict | None
    rng: dict[str, Tensor]
    sampler: dict
    best_epoch: int
    best_metrics: dict[str, float]
    best_state: dict[str, Tensor] | None

    @classmethod
    def capture(
        cls, epoch: int, model: nn.Module, optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler | None, generator: torch.Generator,
        sampler: NegativeSampler, best_epoch: int, best_metrics: dict[str, float],
        best_state: dict[str, Tensor] | None,
    ) -> "FitState":
        """The state now, on the CPU, to be written before training goes on
        (:func:`~components.train.checkpoint_writer.write_checkpoint` does so at
        once): tensors on a GPU are copied, those on the CPU are the
        training objects' own. Copying those too doubled a large graph's
        embedding and its Adam moments at every checkpoint (3 GiB of a
        30 M-edge graph's 9 GiB worker)."""
        return cls(
            epoch=epoch, model=_on_cpu(model.state_dict()),
            optimizer=_on_cpu(optimizer.state_dict()),
            schedule=None if schedule is None else schedule.state_dict(),
            rng=random_states(generator), sampler=_on_cpu(sampler.state_dict()),
            best_epoch=best_epoch,
            best_metrics=dict(best_metrics),
            best_state=None if best_state is None else _on_cpu(best_state),
        )

    def restore(
        self, model: nn.Module, optimizer: torch.optim.Optimizer,
        schedule: torch.optim.lr_scheduler.LRScheduler | None, generator: torch.Generator,
        sampler: NegativeSampler,
    ) -> None:
        """Puts the state back into freshly built training objects."""
        model.load_state_dict(self.model)
        optimizer.load_state_dict(self.optimizer)
        if schedule is not None and self.schedule is not None:
            schedule.load_state_dict(self.schedule)
        restore_random_states(self.rng, generator)
        sampler.load_state_dict(self.sampler)

    def save(self, directory: Path, rank: int = 0) -> None:
        """Writes the shared state (rank 0) and this worker's random states
        and sampler (``rng-<rank>.pt``: every worker draws its own negatives)."""
        torch.save({"rng": self.rng, "sampler": self.sampler}, directory / f"rng-{rank}.pt")
        if rank == 0:
            torch.save({**vars(self), "rng": None, "sampler": None}, directory / STATE_FILE)

    @classmethod
    def load(cls, directory: Path, rank: int = 0) -> "FitState":
        """Reads what :meth:`save` wrote, tensors only (``weights_only``)."""
        values = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=True)
        values.update(torch.load(directory / f"rng-{rank}.pt", weights_only=True))
        return cls(**values)


def random_states(generator: torch.Generator) -> dict[str, Tensor]:
    """The sampling generator's, torch's CPU and the CUDA device's states."""
    states = {"sampler": generator.get_state(), "torch": torch.get_rng_state()}
    if generator.device.type == "cuda":
        states["cuda"] = torch.cuda.get_rng_state(generator.device)
    return states


def restore_random_states(states: dict[str, Tensor], generator: torch.Generator) -> None:
    generator.set_state(states["sampler"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and generator.device.type == "cuda":
        torch.cuda.set_rng_state(states["cuda"], generator.device)


def _on_cpu(value: object) -> object:
    """Nested dicts, lists and tuples with every tensor detached and on the
    CPU (a GPU tensor copied, a CPU tensor itself)."""
    if isinstance(value, Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _on_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_on_cpu(item) for item in value)
    return value
