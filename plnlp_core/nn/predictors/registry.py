"""The table of link predictors by name; each predictor module registers
itself here."""
from torch import nn

from plnlp_core.registry import Registry

PREDICTORS: Registry[type[nn.Module]] = Registry("predictor")
