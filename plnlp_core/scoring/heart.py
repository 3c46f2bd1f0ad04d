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

the mean of the optimistic and the pessimistic rank. Keys start with
``heart_`` (``heart_mrr``, ``heart_hits_20``): they are not OGB's metrics,
whose negatives are shared by all positives.
"""
from collections.abc import Callable, Mapping

import torch
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.scoring.hard_negatives import hard_negative_pairs

HITS_K = (1, 3, 10, 20, 50, 100)


def heart_ranks(pos_score: Tensor, neg_score: Tensor) -> Tensor:
    """:math:`r_i` of each positive, ``[P]``, from its score ``[P]`` and its
    negatives' ``[P, K]``."""
    pos = pos_score.reshape(-1, 1)
    above = (neg_score > pos).sum(dim=1)
    tied = (neg_score == pos).sum(dim=1)
    return 1 + above + tied / 2


def heart_metrics(pos_score: Tensor, neg_score: Tensor,
                  hits_k: tuple[int, ...] = HITS_K) -> dict[str, float]:
    """``heart_mrr`` and ``heart_hits_<k>`` for each of ``hits_k``, from the
    scores of the positives ``[P]`` and of their own negatives ``[P, K]``."""
    ranks = heart_ranks(pos_score, neg_score)
    metrics = {"heart_mrr": float((1 / ranks).mean())}
    metrics.update({f"heart_hits_{k}": float((ranks <= k).float().mean()) for k in hits_k})
    return metrics


@torch.no_grad()
def heart_evaluate(scorer: Callable[[Tensor], Tensor], pos: Tensor, negatives: Tensor,
                   batch_size: int = 2**16,
                   hits_k: tuple[int, ...] = HITS_K) -> dict[str, float]:
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
    return heart_metrics(torch.cat(pos_score), torch.cat(neg_score), hits_k)


def heart_split_metrics(scorer: Callable[[Tensor], Tensor], split: LinkSplit,
                        negatives: Mapping[str, Tensor],
                        batch_size: int = 2**16) -> dict[str, float]:
    """:func:`heart_evaluate` of ``scorer`` on the positives of each part of
    ``split`` that ``negatives`` has (``valid``, ``test``: see
    :func:`~plnlp_core.scoring.hard_negatives.split_hard_negatives`), keyed
    ``<part>_heart_<metric>`` (``test_heart_mrr``), beside OGB's
    ``test_mrr``."""
    return {f"{part}_{key}": value
            for part, part_negatives in negatives.items()
            for key, value in heart_evaluate(scorer, getattr(split, f"{part}_pos"),
                                             part_negatives, batch_size).items()}
