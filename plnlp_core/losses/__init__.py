r"""Pairwise ranking objectives (paper §4.3) and the classification baseline.

Every loss takes the scores of ``m`` positive pairs ``pos`` (shape ``[m]``),
the scores of the negatives each positive is ranked against ``neg`` (shape
``[m, num_neg]``) and an optional per-positive weight (shape ``[m]``), and
returns a **sum** over pairs, so that a batch split across workers adds up to
the loss of the whole batch. A loss of one's own subclasses :class:`RankingLoss`.
"""
from plnlp_core.choices import WEIGHTED_LOSSES
from plnlp_core.losses.auc import auc_loss
from plnlp_core.losses.base import RankingLoss
from plnlp_core.losses.cross_entropy import cross_entropy_loss
from plnlp_core.losses.hinge_auc import hinge_auc_loss
from plnlp_core.losses.log_rank import log_rank_loss
from plnlp_core.losses.registry import LOSSES, LossFn
from plnlp_core.losses.weighted_hinge_auc import weighted_hinge_auc_loss

__all__ = [
    "LOSSES",
    "WEIGHTED_LOSSES",
    "LossFn",
    "RankingLoss",
    "auc_loss",
    "cross_entropy_loss",
    "hinge_auc_loss",
    "log_rank_loss",
    "weighted_hinge_auc_loss",
]
