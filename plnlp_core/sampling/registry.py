"""The table of negative samplers by name; each sampler module registers
itself here."""
from plnlp_core.registry import Registry
from plnlp_core.sampling.base import NegativeSampler

SAMPLERS: Registry[type[NegativeSampler]] = Registry("sampler")
