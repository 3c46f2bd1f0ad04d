"""Negative samplers (paper §4.4) and negative sample sharing.

A sampler is built from the training graph and, given ``m`` positive pairs,
returns ``m`` negative pairs that are never a training edge nor a self-loop.
"""
from plnlp_core.registry import Registry
from plnlp_core.sampling.base import NegativeSampler

SAMPLERS: Registry[type[NegativeSampler]] = Registry("sampler")

from plnlp_core.sampling.global_sampler import GlobalSampler  # noqa: E402
from plnlp_core.sampling.local_sampler import LocalSampler  # noqa: E402
from plnlp_core.sampling.sharing import share_negatives  # noqa: E402

__all__ = ["SAMPLERS", "GlobalSampler", "LocalSampler", "NegativeSampler", "share_negatives"]
