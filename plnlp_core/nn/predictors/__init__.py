"""Link predictors (paper §4.2): score a pair from its two node vectors.

Every predictor has a ``symmetric`` flag: whether ``s(i, j) == s(j, i)``,
which makes it unfit for directed graphs.
"""
from plnlp_core.nn.predictors.bilinear import BilinearPredictor
from plnlp_core.nn.predictors.dot import DotPredictor
from plnlp_core.nn.predictors.mlp import MLPConcatPredictor, MLPPredictor
from plnlp_core.nn.predictors.registry import PREDICTORS

__all__ = ["PREDICTORS", "BilinearPredictor", "DotPredictor", "MLPConcatPredictor", "MLPPredictor"]
