"""HeaRT's published negatives: the ``heart_valid_samples.npy`` and
``heart_test_samples.npy`` that the authors' generator writes (and that they
distribute for the OGB datasets), ``[P, K, 2]`` node pairs per positive, the
first :math:`K/2` keeping its source, the rest its target. Read with
``allow_pickle=False`` (never unpickled) and checked against the split
before any positive is scored."""
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.edge_set import EdgeSet

FILE_NAMES = {"valid": "heart_valid_samples.npy", "test": "heart_test_samples.npy"}


class HeartFileError(ValueError):
    """A published negatives file that cannot be used, in one sentence."""


def read_heart_files(folder: Path, split: LinkSplit,
                     num_negatives: int) -> dict[str, tuple[Tensor, Tensor]]:
    """Each part's positives ``[P, 2]`` and negatives ``[P, K]`` (the node
    that replaces an endpoint, as
    :func:`~plnlp_core.scoring.hard_negatives.hard_negatives` returns them)
    from HeaRT's files in ``folder``. The positives are those the file's rows
    keep, which must be positives of the split's part (HeaRT's ogbl-ppa files
    hold a subset)."""
    return {part: _read_part(folder / name, getattr(split, f"{part}_pos"), split.num_nodes,
                             num_negatives)
            for part, name in FILE_NAMES.items()}


def _read_part(path: Path, split_pos: Tensor, num_nodes: int,
               num_negatives: int) -> tuple[Tensor, Tensor]:
    samples = _load(path)
    if samples.ndim != 3 or samples.shape[2] != 2 or samples.shape[1] != num_negatives:
        raise HeartFileError(
            f"{path} holds an array of shape {list(samples.shape)}, not [positives, "
            f"{num_negatives}, 2]; set heart_negatives to the files' number of negatives per "
            "positive or give the files HeaRT's generator wrote.")
    if samples.size and (samples.min() < 0 or samples.max() >= num_nodes):
        raise HeartFileError(
            f"{path} names nodes up to {int(samples.max())} but the graph has {num_nodes} "
            f"nodes (0 to {num_nodes - 1}); give the files made for this dataset.")
    half = num_negatives // 2
    pos = torch.from_numpy(np.stack([samples[:, 0, 0], samples[:, half, 1]], axis=1)).long()
    kept = (samples[:, :half, 0] == samples[:, :1, 0]).all() and (
        samples[:, half:, 1] == samples[:, half:half + 1, 1]).all()
    if not kept:
        raise HeartFileError(
            f"{path} has rows whose first half does not keep one source or whose second half "
            "does not keep one target; give the files HeaRT's generator wrote.")
    _check_positives(path, pos, split_pos, num_nodes)
    negatives = np.concatenate([samples[:, :half, 1], samples[:, half:, 0]], axis=1)
    return pos, torch.from_numpy(negatives).long()


def _load(path: Path) -> np.ndarray:
    if not path.is_file():
        raise HeartFileError(
            f"{path} does not exist; heart_files must name the folder holding HeaRT's "
            f"{' and '.join(FILE_NAMES.values())}.")
    try:
        samples = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise HeartFileError(f"{path} is not a numeric .npy array ({error}); give the files "
                             "HeaRT's generator wrote.") from None
    if samples.dtype.kind not in "iu":
        raise HeartFileError(f"{path} holds {samples.dtype} values, not node ids; give the "
                             "files HeaRT's generator wrote.")
    return samples


def _check_positives(path: Path, pos: Tensor, split_pos: Tensor, num_nodes: int) -> None:
    known = EdgeSet(split_pos, num_nodes, undirected=True).contains(pos)
    if not known.all():
        row = int((~known).nonzero()[0])
        a, b = pos[row].tolist()
        raise HeartFileError(
            f"{path} row {row} ranks the pair ({a}, {b}), which is no positive of this split "
            f"part ({(~known).sum()} of {len(pos)} rows are not); give the files made for this "
            "dataset's split.")
