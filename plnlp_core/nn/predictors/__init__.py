"""Link predictors (paper §4.2): score a pair from its two node vectors.

Every predictor has a ``symmetric`` flag: whether ``s(i, j) == s(j, i)``,
which makes it unfit for directed graphs.
"""
from torch import nn

from plnlp_core.registry import Registry

PREDICTORS: Registry[type[nn.Module]] = Registry("predictor")

from plnlp_core.nn.predictors.bilinear import BilinearPredictor  # noqa: E402
from plnlp_core.nn.predictors.dot import DotPredictor  # noqa: E402
from plnlp_core.nn.predictors.mlp import MLPConcatPredictor, MLPPredictor  # noqa: E402

__all__ = ["PREDICTORS", "BilinearPredictor", "DotPredictor", "MLPConcatPredictor", "MLPPredictor"]
