"""The table of message-passing layers by encoder name; each layer module
registers its layer here, as predictors, losses and samplers register
theirs. ``"none"`` is the one entry without a layer: no message passing,
which makes the model matrix factorisation over the node input."""
from torch import nn

from plnlp_core.registry import Registry

ENCODERS: Registry[type[nn.Module] | None] = Registry.of("encoder", {"none": None})
"""Encoder layers (paper §4.1), built as ``layer(in_channels,
out_channels, **layer_options)`` once per layer of the stack."""
