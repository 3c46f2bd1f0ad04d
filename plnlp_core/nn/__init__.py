"""The neural parts of a PLNLP model: node input, encoder, predictor, and
the node or edge level (``ENCODER_LEVELS``) that combines them."""
from plnlp_core.choices import EMBEDDING_INITS, NODE_INPUTS, PATH_LENGTHS
from plnlp_core.nn.edge_level.edge_level_model import EdgeLevelModel
from plnlp_core.nn.edge_level.edge_predictor import EDGE_PREDICTORS, EdgeLevelPredictor
from plnlp_core.nn.edge_level.ncn_predictor import NCNPredictor
from plnlp_core.nn.edge_level.target_removal import NodeLevelWithoutTargets
from plnlp_core.nn.encoders.encoder import ENCODERS, GNNEncoder
from plnlp_core.nn.model import ENCODER_LEVELS, PLNLPModel
from plnlp_core.nn.node_input import NodeInput
from plnlp_core.nn.predictors import PREDICTORS

__all__ = ["EDGE_PREDICTORS", "EMBEDDING_INITS", "ENCODERS", "ENCODER_LEVELS", "EdgeLevelModel",
           "EdgeLevelPredictor", "GNNEncoder", "NCNPredictor", "NODE_INPUTS", "NodeInput",
           "NodeLevelWithoutTargets",
           "PATH_LENGTHS", "PLNLPModel", "PREDICTORS"]
