"""The names a config's settings choose among, and what its checks read of
each, as plain data: a command refuses an unknown encoder or a symmetric
predictor on a directed graph without importing torch or PyG. The
implementations register the same names in their own tables
(:data:`plnlp_core.nn.ENCODERS`, :data:`plnlp_core.nn.PREDICTORS`,
:data:`plnlp_core.nn.EDGE_PREDICTORS`, :data:`plnlp_core.nn.ENCODER_LEVELS`,
:data:`plnlp_core.losses.LOSSES`, :data:`plnlp_core.sampling.SAMPLERS`,
:data:`plnlp_core.scoring.heuristics.HEURISTICS`), which
``tests/core/test_choices.py`` keeps equal to these. Each part may also be
one of one's own, named by import path (:mod:`plnlp_core.parts`)."""
from plnlp_core.registry import Registry

PART_KINDS = ("encoder", "predictor", "loss", "sampler")
"""The settings that may name a part of one's own by import path
(``module.path:ClassName``), each with its own settings in ``<kind>_options``."""

OWN_PART = "your own as module.path:ClassName (docs/extending.md)"
"""What a refusal of an unknown part's name offers besides the built-in names."""

ENCODER_CHOICES: Registry[bool] = Registry.of("encoder", {
    "agdn": False, "gat": False, "gcn": False, "none": False, "pure_gcn": True, "sage": False,
    "sum": True}, OWN_PART)
"""``encoder``: whether each is weight-free (its input's size is its output's)."""

WEIGHT_FREE_ENCODERS = tuple(name for name in ENCODER_CHOICES.names
                             if ENCODER_CHOICES.get(name))
"""Encoders without weights: their input's size is their output's."""

PREDICTOR_CHOICES: Registry[bool] = Registry.of("predictor", {
    "bilinear": False, "dot": True, "mlp": True, "mlp_concat": False}, OWN_PART)
"""``predictor`` at ``encoder_level: node``: whether each is symmetric
(``s(i, j) == s(j, i)``, unfit for directed graphs)."""

EDGE_PREDICTOR_CHOICES: Registry[bool] = Registry.of("edge-level predictor", {
    "mlp": True, "ncn": True})
"""``predictor`` at ``encoder_level: edge``: whether each is symmetric."""

ENCODER_LEVEL_CHOICES = ("edge", "node")
"""``encoder_level``."""

LOSS_CHOICES: Registry[bool] = Registry.of("loss", {
    "auc": False, "ce": False, "hinge_auc": False, "log_rank": False,
    "weighted_hinge_auc": True}, OWN_PART)
"""``loss``: whether each reads a per-positive weight (a margin)."""

WEIGHTED_LOSSES = frozenset(name for name in LOSS_CHOICES.names if LOSS_CHOICES.get(name))
"""The losses that read a per-positive weight (a margin)."""

SAMPLER_CHOICES: Registry[bool] = Registry.of("sampler", {
    "adversarial": True, "global": False, "hard": True, "local": False}, OWN_PART)
"""``sampler``: whether each is model-guided (draws from a candidate pool)."""

HEURISTIC_CHOICES = ("aa", "cn", "ra")
"""The classic heuristics ``--model heuristic:<name>`` scores pairs with."""

NODE_INPUTS = ("embedding", "features", "both")
"""``node_input``."""

EMBEDDING_INITS = ("xavier", "orthogonal")
"""``embedding_init``."""

PATH_LENGTHS = (2, 3)
"""``edge_path_length``: common neighbours, or also paths of length 3."""

NEGATIVE_MODES = ("shared", "independent")
"""``negatives``: one draw shared by a batch's positives, or one each."""

DEFAULT_SPLIT = "random:0.85,0.05,0.10"
NCN_SPLIT = "random:0.70,0.10,0.20"  # NCN/NCNC's split of a Planetoid graph, its default
"""How an edge list of one's own is split when ``--split`` is not given
(the default of :func:`plnlp_core.data.own_graph.load_own_graph`)."""

WALK_STARTS = ("all", "train_endpoints", "edge_endpoints")
"""``walk_starts``."""

HEART_MODES = ("heart", "heart_filtered")
"""``heart_mode``: HeaRT's protocol, or every known link masked
(:data:`plnlp_core.scoring.hard_negatives.HARD_NEGATIVE_MODES`)."""

WALK_POSITIVES = ("union", "walks")
"""``walk_positives``."""

EDGE_MARGINS = ("normalized", "raw")
"""``edge_margin``."""

LR_DECAYS = ("none", "linear")
"""``lr_decay``."""

SELECT_BEST = ("first", "last")
"""``select_best``."""

PRECISIONS = ("fp32", "tf32", "bf16", "auto")
"""``precision``."""

SAMPLED_ENCODERS = ("sage", "gcn", "gat")
"""Encoders that run on a sampled neighbourhood (``fanouts``): PyG's
message passing over its edge list."""

EDGE_DROPPING_ENCODERS = ("gcn", "sum", "pure_gcn")
"""Encoders that read the adjacency's values, so that encoder_edge_dropout
can thin them."""

TARGET_REMOVAL_LIMIT = 0.15
"""The largest fraction of the graph's edges one training graph lacks under
target-edge removal (``target_removal_limit``'s default): about what
evaluation's graph lacks (the held-out edges); a step whose positives are
more is scored in groups. At ``1.0`` a step is one group, all its positives
removed at once (NCN's own removal)."""

EDGE_LEVEL_SETTINGS = {"target_edge_removal": True, "edge_dropout": 0.0, "edge_path_length": 2,
                       "edge_counts": None, "ncn_xlin": False, "ncn_tail_activation": False,
                       "ncn_two_layer_output": False, "ncn_beta": 1.0, "ncn_completion": False,
                       "ncn_completion_scale": 4.3, "ncn_completion_offset": 2.8,
                       "ncn_completion_threshold": 0.75, "ncn_completion_alpha": 1.0}
"""The edge level's settings and their defaults, which the node level refuses
other values of."""

NCN_SETTINGS = {key: EDGE_LEVEL_SETTINGS[key] for key in EDGE_LEVEL_SETTINGS
                if key.startswith("ncn_")}
"""The settings of ``predictor: ncn``, refused with ``predictor: mlp``."""
