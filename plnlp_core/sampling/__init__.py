"""Negative samplers (paper §4.4) and how negatives are formed per positive.

A sampler is built from the observed graph and, given ``m`` positive pairs,
returns ``m`` negative pairs that are never an observed edge nor a self-loop;
:func:`draw_negatives` turns draws into ``num_neg`` negatives per positive,
shared or independent.
"""
from plnlp_core.registry import Registry
from plnlp_core.sampling.base import NegativeSampler

SAMPLERS: Registry[type[NegativeSampler]] = Registry("sampler")

from plnlp_core.sampling.adversarial_sampler import AdversarialSampler  # noqa: E402
from plnlp_core.sampling.global_sampler import GlobalSampler  # noqa: E402
from plnlp_core.sampling.hard_sampler import HardSampler  # noqa: E402
from plnlp_core.sampling.local_sampler import LocalSampler  # noqa: E402
from plnlp_core.sampling.model_guided import ModelGuidedSampler, PairScorer, check_pool_size  # noqa: E402
from plnlp_core.sampling.negatives import NEGATIVE_MODES, Negatives, draw_negatives  # noqa: E402
from plnlp_core.sampling.sharing import share_negatives  # noqa: E402

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
