"""Negative samplers (paper §4.4) and how negatives are formed per positive.

A sampler is built from the observed graph and, given ``m`` positive pairs,
returns ``m`` negative pairs that are never an observed edge nor a self-loop;
:func:`draw_negatives` turns draws into ``num_neg`` negatives per positive,
shared or independent.
"""
from plnlp_core.choices import NEGATIVE_MODES
from plnlp_core.sampling.adversarial_sampler import AdversarialSampler
from plnlp_core.sampling.base import NegativeSampler
from plnlp_core.sampling.global_sampler import GlobalSampler
from plnlp_core.sampling.hard_sampler import HardSampler
from plnlp_core.sampling.local_sampler import LocalSampler
from plnlp_core.sampling.model_guided import ModelGuidedSampler, PairScorer, check_pool_size
from plnlp_core.sampling.negatives import Negatives, draw_negatives
from plnlp_core.sampling.registry import SAMPLERS
from plnlp_core.sampling.sharing import share_negatives

__all__ = [
    "NEGATIVE_MODES",
    "SAMPLERS",
    "AdversarialSampler",
    "GlobalSampler",
    "HardSampler",
    "LocalSampler",
    "ModelGuidedSampler",
    "NegativeSampler",
    "PairScorer",
    "check_pool_size",
    "Negatives",
    "draw_negatives",
    "share_negatives",
]
