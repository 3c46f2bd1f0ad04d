"""The neural parts of a PLNLP model: node input, encoder, predictor, and
the node or edge level (``ENCODER_LEVELS``) that combines them."""
from plnlp_core.nn.edge_level import EdgeLevelModel
from plnlp_core.nn.edge_predictor import PATH_LENGTHS, EdgeLevelPredictor
from plnlp_core.nn.encoder import ENCODERS, GNNEncoder
from plnlp_core.nn.model import ENCODER_LEVELS, PLNLPModel
from plnlp_core.nn.node_input import NODE_INPUTS, NodeInput
from plnlp_core.nn.predictors import PREDICTORS

__all__ = ["ENCODERS", "ENCODER_LEVELS", "EdgeLevelModel", "EdgeLevelPredictor", "GNNEncoder",
           "NODE_INPUTS", "NodeInput", "PATH_LENGTHS", "PLNLPModel", "PREDICTORS"]
