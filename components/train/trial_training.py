"""A sweep trial's training when it needs one worker: run in the trial's
own actor, which already holds the trial's CPUs and GPU share, instead of
starting a Ray Train controller and worker group for it (seven processes,
about 9 s on 2 cores before the first epoch, each trial)."""
import threading

import ray.train
import torch

from components.storage.location import Location
from components.train.checkpoint_reader import newest_checkpoint
from components.train.session import TrialSession, TrialStopped
from components.train.worker import train_with


def train_in_trial(loop_config: dict, folder: Location, callbacks: list[ray.train.UserCallback],
                   cpus: int, use_gpu: bool, stop: threading.Event) -> str:
    """Trains as :func:`components.train.worker.train_worker` does, in
    this process, on ``cpus`` threads (and the GPU Ray gave it, with
    ``use_gpu``), checkpointing into ``folder`` (where Ray Train would);
    ``callbacks`` see each report. A restarted trial goes on from the
    newest complete checkpoint there; ``stop`` ends the training after the
    current epoch (:class:`~components.train.session.TrialStopped`), once
    every epoch it reported is logged.
    Returns the path of the newest checkpoint, in ``folder``'s file system."""
    torch.set_num_threads(cpus)
    session = TrialSession(folder, callbacks, use_gpu, stop)
    try:
        train_with(loop_config, session)
    except TrialStopped:
        session.deliver()  # the epochs since its last report
        raise
    return newest_checkpoint(folder, world_size=1)
