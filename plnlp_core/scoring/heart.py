r"""Scoring under HeaRT's protocol (Li et al., 2023, "Evaluating Graph Neural
Networks for Link Prediction: Current Pitfalls and New Benchmarking", Sec. 4):
each positive :math:`i` is ranked against its own :math:`K` negatives (see
:mod:`plnlp_core.scoring.hard_negatives`), a tie counting as half a negative
above it,

.. math::
    r_i = 1 + \sum_{j=1}^{K} \left( [s_{ij}^- > s_i^+]
          + \tfrac{1}{2} [s_{ij}^- = s_i^+] \right), \qquad
    \mathrm{MRR} = \frac{1}{P} \sum_i \frac{1}{r_i}, \qquad
    \mathrm{Hits@}k = \frac{1}{P} \sum_i [r_i \le k],

the mean of the optimistic and the pessimistic rank. Keys start with the
negatives' mode, ``heart_`` (``heart_mrr``, ``heart_hits_20``) or
``heart_filtered_``: they are not OGB's metrics, whose negatives are shared by
all positives.

Beside each figure stands its **ceiling**, what a perfect predictor reaches on
the same negatives: every known link (of any split) scored 1, every other pair
0, so a negative that is a true link ties with the positive,

.. math::
    r_i^\star = 1 + \tfrac{1}{2} \bigl|\{j : (s_{ij}^-) \in E\}\bigr|,

1.0 exactly when no negative is a true link (``heart_filtered``).
"""
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.edge_set import EdgeSet
from plnlp_core.scoring.hard_negatives import hard_negative_pairs, split_hard_negatives
from plnlp_core.scoring.heart_files import read_heart_files

HITS_K = (1, 3, 10, 20, 50, 100)


def heart_ranks(pos_score: Tensor, neg_score: Tensor) -> Tensor:
    """:math:`r_i` of each positive, ``[P]``, from its score ``[P]`` and its
    negatives' ``[P, K]``."""
    pos = pos_score.reshape(-1, 1)
    above = (neg_score > pos).sum(dim=1)
    tied = (neg_score == pos).sum(dim=1)
    return 1 + above + tied / 2


def heart_metrics(pos_score: Tensor, neg_score: Tensor, hits_k: tuple[int, ...] = HITS_K,
                  prefix: str = "heart") -> dict[str, float]:
    """``<prefix>_mrr`` and ``<prefix>_hits_<k>`` for each of ``hits_k``, from
    the scores of the positives ``[P]`` and of their own negatives ``[P, K]``."""
    ranks = heart_ranks(pos_score, neg_score)
    metrics = {f"{prefix}_mrr": float((1 / ranks).mean())}
    metrics.update({f"{prefix}_hits_{k}": float((ranks <= k).float().mean()) for k in hits_k})
    return metrics


@torch.no_grad()
def heart_evaluate(scorer: Callable[[Tensor], Tensor], pos: Tensor, negatives: Tensor,
                   batch_size: int = 2**16, hits_k: tuple[int, ...] = HITS_K,
                   prefix: str = "heart") -> dict[str, float]:
    """:func:`heart_metrics` of ``scorer``, which maps pairs ``[M, 2]`` to
    scores ``[M]`` (e.g. ``lambda pairs: model.score(h, pairs, adj)``), on the
    positives ``pos`` (``[P, 2]``) and their
    :func:`~plnlp_core.scoring.hard_negatives.hard_negatives` ``[P, K]``,
    scoring about ``batch_size`` pairs at a time."""
    rows = max(1, batch_size // (negatives.size(1) + 1))
    pos_score, neg_score = [], []
    for p, n in zip(pos.split(rows), negatives.split(rows), strict=True):
        pos_score.append(scorer(p).reshape(-1).cpu())
        neg_score.append(scorer(hard_negative_pairs(p, n).view(-1, 2)).view(len(p), -1).cpu())
    return heart_metrics(torch.cat(pos_score), torch.cat(neg_score), hits_k, prefix)


def heart_ceiling(pos: Tensor, negatives: Tensor, links: Tensor, num_nodes: int,
                  batch_size: int = 2**20, prefix: str = "heart") -> dict[str, float]:
    """:func:`heart_metrics` of a perfect predictor, ``<prefix>_ceiling_<metric>``:
    the positives ``pos`` (``[P, 2]``) and every negative pair of
    ``negatives`` (``[P, K]``) that is one of the known ``links`` (``[E, 2]``,
    either direction) score 1, the other negatives 0."""
    known = EdgeSet(links, num_nodes, undirected=True)
    rows = max(1, batch_size // negatives.size(1))
    neg_score = torch.cat([
        known.contains(hard_negative_pairs(p, n).view(-1, 2)).view(len(p), -1).float()
        for p, n in zip(pos.split(rows), negatives.split(rows), strict=True)])
    return heart_metrics(torch.ones(len(pos)), neg_score, prefix=f"{prefix}_ceiling")


@dataclass(frozen=True)
class HardNegatives:
    """The hard negatives a run ranks its positives against: ``mode``
    (``heart`` or ``heart_filtered``, see
    :mod:`plnlp_core.scoring.hard_negatives`), and per part (``valid``,
    ``test``) the positives ``[P, 2]``, their negatives ``[P, K]`` and the
    ceiling's metrics (:func:`heart_ceiling`, keyed ``<part>_<mode>_ceiling_<metric>``)."""

    mode: str
    positives: dict[str, Tensor]
    negatives: dict[str, Tensor]
    ceiling: dict[str, float]

    @property
    def num_negatives(self) -> int:
        return next(iter(self.negatives.values())).size(1)


def split_heart_negatives(split: LinkSplit, num_negatives: int = 500, mode: str = "heart",
                          files: Path | None = None) -> HardNegatives:
    """The :class:`HardNegatives` of ``split``'s validation and test
    positives: read from HeaRT's published ``files`` (a folder; ``heart`` mode
    only), else built (:func:`~plnlp_core.scoring.hard_negatives.split_hard_negatives`),
    with their ceilings on every link of the split."""
    if files is not None:
        parts = read_heart_files(files, split, num_negatives)
    else:
        built = split_hard_negatives(split, num_negatives, mode)
        parts = {part: (getattr(split, f"{part}_pos"), negatives)
                 for part, negatives in built.items()}
    links = torch.cat([split.train_pos, split.valid_pos, split.test_pos])
    ceiling = {f"{part}_{key}": value for part, (pos, negatives) in parts.items()
               for key, value in heart_ceiling(pos, negatives, links, split.num_nodes,
                                               prefix=mode).items()}
    return HardNegatives(mode, {part: pos for part, (pos, _) in parts.items()},
                         {part: negatives for part, (_, negatives) in parts.items()}, ceiling)


def heart_split_metrics(scorer: Callable[[Tensor], Tensor], hard: HardNegatives,
                        batch_size: int = 2**16) -> dict[str, float]:
    """:func:`heart_evaluate` of ``scorer`` on each part of ``hard``, keyed
    ``<part>_<mode>_<metric>`` (``test_heart_mrr``, beside OGB's
    ``test_mrr``), and the ceiling of each (``test_heart_ceiling_mrr``)."""
    metrics = {f"{part}_{key}": value
               for part, negatives in hard.negatives.items()
               for key, value in heart_evaluate(scorer, hard.positives[part], negatives,
                                                batch_size, prefix=hard.mode).items()}
    return {**metrics, **hard.ceiling}
