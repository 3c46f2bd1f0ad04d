"""How many sweep trials share a GPU: as many as their estimated peak memory
(:func:`plnlp_core.memory_estimate.peak_gpu_bytes`, the largest over the
searched sizes) fits in the GPU's, leaving :data:`HEADROOM` of it free; an
asked-for number that does not fit is refused with one sentence.
:func:`pack_trials` gives the trials' new resources, which the sweep's plan
takes (:meth:`pipelines.planning.request.SweepPlan.with_resources`)."""
import dataclasses
import itertools
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pipelines.planning.sweep_space import Resources, SearchSpace
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.memory_estimate import MIB, peak_gpu_bytes

if TYPE_CHECKING:
    from components.storage.split_meta import DatasetMeta

HEADROOM = 0.1
"""The fraction of a GPU's memory left free of the trials' estimates."""
SIZE_SETTINGS = ("embedding_dim", "hidden_channels", "encoder_layers", "predictor_hidden",
                 "predictor_layers", "batch_size", "num_neg", "eval_batch_size", "precision",
                 "encoder_level", "encoder", "predictor", "node_input")
"""The settings the estimate reads, whose searched values make a trial larger."""
MOST_VARIANTS = 64


def pack_trials(trials_per_gpu: int | str, space: SearchSpace, meta: "DatasetMeta",
                gpu_bytes: int) -> tuple[Resources, str]:
    """Each trial's resources with ``1 / N`` of a GPU of ``gpu_bytes``: N as
    many as fit with ``--trials-per-gpu auto``, else the number given,
    refused when it does not fit; and the line that says the packing.
    ``meta`` describes the loaded graph; ``space`` is left as it is."""
    trial = trial_peak_bytes(space.base, space.searched, meta.dataset_info(), meta.num_nodes,
                             meta.num_train_edges)
    resources = space.resources
    if trials_per_gpu == "auto":
        trials_per_gpu = packed_trials(trial, gpu_bytes)
        resources = dataclasses.replace(resources, gpus_per_worker=1 / trials_per_gpu)
    else:
        check_packing(trials_per_gpu, trial, gpu_bytes)
    return resources, describe(trials_per_gpu, trial, gpu_bytes)


def trial_peak_bytes(base: PLNLPConfig, searched: dict[str, dict], info: DatasetInfo,
                     num_nodes: int, num_train_edges: int) -> int:
    """The largest estimate among the trials a search space can make: every
    combination of the searched sizes' choices, at their upper bounds (the
    first :data:`MOST_VARIANTS` combinations)."""
    variants = itertools.islice(_size_variants(base, searched, info), MOST_VARIANTS)
    return max(peak_gpu_bytes(config, info, num_nodes, num_train_edges) for config in variants)


def _size_variants(base: PLNLPConfig, searched: dict[str, dict],
                   info: DatasetInfo) -> Iterator[PLNLPConfig]:
    values = {key: _candidates(spec) for key, spec in searched.items() if key in SIZE_SETTINGS}
    yield base  # what the space's other trials start from
    for chosen in itertools.product(*values.values()):
        config = base.replace(**dict(zip(values, chosen, strict=True)))
        try:
            config.validate(info)
        except PLNLPError:
            continue  # a combination the sweep cannot run either
        yield config


def _candidates(spec: dict) -> list[object]:
    (kind, values), = spec.items()
    return list(values) if kind in ("choice", "grid") else [values[1]]


def packed_trials(trial_bytes: int, gpu_bytes: int) -> int:
    """How many trials of ``trial_bytes`` fit in ``gpu_bytes`` with
    :data:`HEADROOM` left free; refuses a GPU that cannot hold one."""
    fits = math.floor((1 - HEADROOM) * gpu_bytes / trial_bytes)
    if fits < 1:
        raise PLNLPError(f"a trial needs about {trial_bytes / 2**30:.1f} GiB of GPU memory by "
                         f"its estimate and the GPU has {gpu_bytes / 2**30:.1f} GiB; lower "
                         "batch_size or eval_batch_size, or the model's widths.")
    return fits


def check_packing(trials: int, trial_bytes: int, gpu_bytes: int) -> None:
    """Refuses ``trials`` trials a GPU when their estimates do not fit it."""
    fits = packed_trials(trial_bytes, gpu_bytes)
    if trials > fits:
        raise PLNLPError(f"--trials-per-gpu {trials}: each trial needs about "
                         f"{trial_bytes / 2**30:.1f} GiB of GPU memory by its estimate, so "
                         f"{trials} need {trials * trial_bytes / 2**30:.1f} GiB and the GPU has "
                         f"{gpu_bytes / 2**30:.1f} GiB; give --trials-per-gpu {fits} or fewer, "
                         "or --trials-per-gpu auto.")


def describe(trials: int, trial_bytes: int, gpu_bytes: int) -> str:
    """The line a sweep prints of its packing."""
    return (f"{trials} trials a GPU: each needs about {trial_bytes / MIB:,.0f} MiB by its "
            f"estimate, of the GPU's {gpu_bytes / MIB:,.0f} MiB")
