"""A package of one's own parts for plnlp, as a researcher writes one: an
encoder layer, a predictor, a loss and a negative sampler, each named in a
config by its import path (docs/extending.md)::

    python pipelines/run.py --dataset ddi --preset smoke \\
        --set encoder=examples.link_parts.layers:GINLayer --set encoder_options.train_eps=true

``parts.yaml`` names all four as a ``--config`` file, ``space.yaml`` sweeps
them against the built-in ones."""
from examples.link_parts.layers import GINLayer
from examples.link_parts.losses import MarginRankingLoss
from examples.link_parts.predictors import HadamardDistanceMLP
from examples.link_parts.samplers import HeadOrTailSampler

__all__ = ["GINLayer", "HadamardDistanceMLP", "HeadOrTailSampler", "MarginRankingLoss"]
