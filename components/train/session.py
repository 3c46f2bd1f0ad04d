"""Where a training function runs: a Ray Train worker of a worker group,
or a sweep trial's own actor, which trains alone without starting Ray
Train. Both give :func:`components.train.worker.train_with` the same
few things: the worker's rank, the run's storage folder, the checkpoint to
go on from, a way to report, and the model's device."""
import threading
from pathlib import Path

import pyarrow.fs as pafs
import ray.train
import ray.train.torch
import torch
from ray.train import CheckpointUploadMode

from components.recording.epoch_logger import EpochLogger
from components.storage.location import Location


class TrialStopped(Exception):
    """Raised in a training that is stopped: a trial's, when Tune stops the
    trial, or a training actor's, when its interrupted driver took the last
    reports (:meth:`~components.train.report_relay.ReportQueue.last`)."""


class RayTrainSession:
    """A worker of a Ray Train worker group: Train's context, storage and reports."""

    reports_each_epoch = False  # a report waits for the controller's poll: see REPORT_GAP_S
    removes_reported_checkpoints = True  # the controller keeps the newest reported one

    def __init__(self) -> None:
        context = ray.train.get_context()
        self.rank, self.world_size = context.get_world_rank(), context.get_world_size()
        self._storage = context.get_storage()
        self.filesystem: pafs.FileSystem = self._storage.storage_filesystem
        self.folder: str = self._storage.experiment_fs_path

    def held_checkpoint(self) -> ray.train.Checkpoint | None:
        """The checkpoint Train's controller holds (its latest report's)."""
        return ray.train.get_checkpoint()

    def persist(self, directory: Path, name: str) -> ray.train.Checkpoint:
        """Copies ``directory`` into the run's storage folder as ``name``."""
        return self._storage.persist_current_checkpoint(
            ray.train.Checkpoint.from_directory(str(directory)), name)

    def report(self, metrics: dict, checkpoint: ray.train.Checkpoint | None) -> None:
        """Hands ``metrics`` (and a checkpoint already in storage) to Train's controller."""
        ray.train.report(metrics, checkpoint=checkpoint,
                         checkpoint_upload_mode=CheckpointUploadMode.NO_UPLOAD)

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model on this worker's device, wrapped for DDP in a group."""
        return ray.train.torch.prepare_model(model)

    def device(self) -> torch.device:
        return ray.train.torch.get_device()

    def after_epoch(self) -> None:
        """Nothing: Train's controller stops its workers itself."""


class TrialSession:
    """A sweep trial that trains in its own actor, as the only worker: its
    reports go straight to ``callbacks`` (each a ``ray.train.UserCallback``,
    called as Train's controller calls it), its checkpoints into
    ``storage`` (the folder Ray Train would use), and it stops after the
    epoch during which ``stop`` was set.

    Args:
        storage (Location): The run's storage folder.
        callbacks (list): What sees each report.
        use_gpu (bool): Train on the GPU Ray gave the trial.
        stop (threading.Event): Set when Tune stops the trial.
    """

    rank, world_size = 0, 1
    reports_each_epoch = True  # a report is a call of the callbacks, here
    removes_reported_checkpoints = False

    def __init__(self, storage: Location, callbacks: list[ray.train.UserCallback],
                 use_gpu: bool, stop: threading.Event) -> None:
        self.storage = storage
        self.filesystem, self.folder = storage.filesystem, storage.path
        self.callbacks = callbacks
        self._device = torch.device("cuda", 0) if use_gpu else torch.device("cpu")
        self.stop = stop

    def held_checkpoint(self) -> None:
        """None: a restarted trial finds its checkpoints in storage."""
        return None

    def persist(self, directory: Path, name: str) -> ray.train.Checkpoint:
        """Copies ``directory`` into the run's storage folder as ``name``."""
        saved = self.storage / name
        saved.upload(directory)
        return ray.train.Checkpoint(saved.path, self.filesystem)

    def report(self, metrics: dict, checkpoint: ray.train.Checkpoint | None) -> None:
        """Hands ``metrics`` to every callback, as Train's controller would."""
        for callback in self.callbacks:
            callback.after_report(None, [metrics], checkpoint)

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        return model.to(self._device)

    def device(self) -> torch.device:
        return self._device

    def deliver(self) -> None:
        """Returns once the callbacks that log (an
        :class:`~components.recording.epoch_logger.EpochLogger`) have
        every epoch reported so far in MLflow."""
        for callback in self.callbacks:
            if isinstance(callback, EpochLogger):
                callback.deliver()

    def after_epoch(self) -> None:
        """Ends the training once Tune has stopped the trial."""
        if self.stop.is_set():
            raise TrialStopped
