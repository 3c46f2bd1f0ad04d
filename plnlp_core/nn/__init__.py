"""The neural parts of a PLNLP model: node input, encoder, predictor."""
from plnlp_core.nn.encoder import ENCODERS, GNNEncoder
from plnlp_core.nn.model import PLNLPModel
from plnlp_core.nn.node_input import NODE_INPUTS, NodeInput
from plnlp_core.nn.predictors import PREDICTORS

__all__ = ["ENCODERS", "GNNEncoder", "NODE_INPUTS", "NodeInput", "PLNLPModel", "PREDICTORS"]
