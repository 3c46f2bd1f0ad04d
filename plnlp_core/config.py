"""Every setting of a PLNLP experiment, and which of them shape a run. The
checks that refuse impossible ones before any work starts are in
:mod:`plnlp_core.config_checks`, whose :class:`CheckedSettings` gives the
config its ``validate`` and ``validate_graph``."""
import dataclasses
import math
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from plnlp_core.choices import (
    EDGE_DROPPING_ENCODERS,
    EDGE_LEVEL_SETTINGS,
    NCN_SETTINGS,
    PART_KINDS,
    SAMPLER_CHOICES,
    TARGET_REMOVAL_LIMIT,
    WEIGHT_FREE_ENCODERS,
    WEIGHTED_LOSSES,
)
from plnlp_core.config_checks import CheckedSettings, check_setting
from plnlp_core.parts.import_path import import_path_of, is_import_path

OPTION_SETTINGS = tuple(f"{kind}_options" for kind in PART_KINDS)
"""The settings of the parts of one's own, one mapping per kind, set whole
(``encoder_options: {heads: 4}``) or one key at a time (``encoder_options.heads``)."""


@dataclass(frozen=True)
class PLNLPConfig(CheckedSettings):
    """The resolved settings of one experiment; docs/settings.md describes each."""

    dataset: str = "ddi"
    # encoder (§4.1)
    encoder: str = "sage"
    node_input: str = "embedding"  # a config made without a graph; a run: with_graph_node_input
    feature_categories: int | None = None  # None: the features used raw
    embedding_dim: int = 256
    embedding_init: str = "xavier"
    input_dropout: float = 0.0
    input_projection: int | None = None  # None: the node input itself
    projection_dropout: float = 0.0  # on the projected input (input_projection)
    hidden_channels: int = 256
    encoder_layers: int = 2
    dropout: float = 0.0
    activate_last_layer: bool = False
    encoder_relu: bool = True
    encoder_residual: bool = False
    encoder_layer_norm: bool = False
    encoder_edge_dropout: float = 0.0
    fanouts: tuple[int, ...] | None = None  # None: full batch; else neighbours per hop
    encoder_initial_residual: float = 0.0
    diffusion_hops: int = 3  # encoder agdn
    encoder_options: dict[str, object] = field(default_factory=dict)  # an encoder of one's own
    # node or edge level (§4.1's ENE, the NCN form); the edge level's own settings
    # (EDGE_LEVEL_SETTINGS) are refused at the node level, NCN's (NCN_SETTINGS) with predictor mlp
    encoder_level: str = "node"
    node_target_edge_removal: bool = False  # the edge level's is target_edge_removal
    target_edge_removal: bool = True
    target_removal_limit: float = TARGET_REMOVAL_LIMIT
    edge_dropout: float = 0.0
    edge_path_length: int = 2
    edge_counts: bool | None = None  # None: on with predictor mlp, off with ncn
    ncn_xlin: bool = False
    ncn_tail_activation: bool = False
    ncn_two_layer_output: bool = False
    ncn_beta: float = 1.0
    ncn_completion: bool = False  # NCNC: one-sided neighbours weighted by their links' scores
    ncn_completion_scale: float = 4.3
    ncn_completion_offset: float = 2.8
    ncn_completion_threshold: float = 0.75
    ncn_completion_alpha: float = 1.0
    # predictor (§4.2)
    predictor: str = "dot"
    predictor_hidden: int = 256
    predictor_layers: int = 2
    predictor_dropout: float = 0.0
    predictor_residual: bool = False
    force_symmetric_predictor: bool = False
    predictor_options: dict[str, object] = field(default_factory=dict)  # one of one's own
    # objective (§4.3)
    loss: str = "auc"
    l2: float = 0.0
    edge_margin: str = "normalized"
    loss_options: dict[str, object] = field(default_factory=dict)  # a loss of one's own
    # negative sampling (§4.4)
    sampler: str = "global"
    num_neg: int = 1
    negatives: str = "shared"
    degree_power: float = 0.0
    candidate_pool: int = 32  # hard and adversarial samplers
    generator_dim: int = 64  # adversarial sampler
    generator_lr: float = 0.01
    sampler_options: dict[str, object] = field(default_factory=dict)  # a sampler of one's own
    # random-walk augmentation (§4.5); walk_length 0 turns it off
    walk_length: int = 0
    walk_starts: str = "all"
    walk_rounds: int = 1
    walk_positives: str = "union"
    # graph and training edges
    valid_as_input: bool = False
    min_train_year: int | None = None
    # optimisation and evaluation
    lr: float = 0.001
    predictor_lr: float | None = None  # None: lr
    lr_decay: str = "none"
    clip_grad_norm: float | None = None
    precision: str = "fp32"
    epochs: int = 100
    batch_size: int = 65536
    batch_fraction: float | None = None  # None: batch_size alone
    max_batches_per_epoch: int | None = None
    eval_every: int = 1
    eval_batch_size: int = 262144
    select_best: str = "first"
    heart_negatives: int = 0  # 0: no HeaRT evaluation of the final model
    heart_mode: str = "heart"  # heart: HeaRT's protocol; heart_filtered: every known link masked
    heart_files: str | None = None  # a folder of HeaRT's published heart_{valid,test}_samples.npy
    checkpoint_every: int = 10
    seed: int = 0

    @classmethod
    def from_mapping(cls, settings: Mapping[str, object]) -> "PLNLPConfig":
        """Builds a config from plain values, refusing unknown keys and
        values of the wrong type. A part's own setting may come as
        ``<kind>_options.<key>`` (``--set encoder_options.heads=4``, a sweep's
        searched key), and a part of one's own as its class (named by its
        import path)."""
        declared = typing.get_type_hints(cls)
        hints = {f.name: declared[f.name] for f in dataclasses.fields(cls)}
        settings = _parts_named(settings)
        for key, value in settings.items():
            check_setting(key, value, hints)
        values = {k: _as_declared(v, hints[k]) for k, v in settings.items()}
        return cls(**values)

    @classmethod
    def setting_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def replace(self, **changes: object) -> "PLNLPConfig":
        return type(self).from_mapping({**dataclasses.asdict(self), **changes})

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def batch_for(self, positives: int, world_size: int = 1) -> int:
        r"""Positives per step of an epoch over ``positives`` (one worker's
        share of ``world_size``): ``batch_size`` split among the workers,
        grown to ``batch_fraction`` of the positives where that is more,

        .. math::
            B = \max\left(\lfloor b / W \rfloor, \lceil f P \rceil\right),

        so that an epoch takes at most :math:`1 / f` steps at any size of
        graph (each step encodes the whole graph once, whatever its batch)."""
        floor = max(self.batch_size // world_size, 1)
        if self.batch_fraction is None:
            return floor
        return max(floor, math.ceil(self.batch_fraction * positives))

    @property
    def uses_random_walk(self) -> bool:
        return self.walk_length > 0

    def shaping_settings(self, heuristic: bool = False,
                         open_choices: Collection[str] = ()) -> dict[str, object]:
        """The settings that shape a run of this config: a heuristic's graph and evaluation
        (:data:`HEURISTIC_SETTINGS`), or for PLNLP every setting but those of the
        parts the config leaves out (:data:`PARTS`). A part stays when one
        of its choices is in ``open_choices`` (the settings a sweep
        searches, which each trial chooses)."""
        unused = {key for part in PARTS if part.left_out(self)
                  and not set(part.choices) & set(open_choices) for key in part.settings}
        keys = HEURISTIC_SETTINGS if heuristic else self.to_dict()
        return _flat_options({key: getattr(self, key) for key in keys if key not in unused})


def with_graph_node_input(settings: Mapping[str, object],
                          feature_dim: int) -> dict[str, object]:
    """``settings``, with ``node_input`` chosen for a graph of
    ``feature_dim`` node features where they leave it out: ``both`` (the
    features beside a trained embedding) where the graph has features, so
    that features a user gave are never read and then ignored, else
    ``embedding``. The one default of a run's node input: the commands
    apply it to every preset, config file and sweep; ``embedding``, the
    field's own, is that of a config made without a graph."""
    if "node_input" in settings:
        return dict(settings)
    return {**settings, "node_input": "both" if feature_dim else "embedding"}


GRAPH_SETTINGS = ("dataset", "valid_as_input", "min_train_year")
"""The settings of the observed graph a model starts from."""

HEURISTIC_SETTINGS = (*GRAPH_SETTINGS, "heart_negatives", "heart_mode", "heart_files")
"""All that a heuristic's run reads: its graph, and whether it is scored on
HeaRT's negatives too."""

LAYERLESS_PREDICTORS = ("dot", "bilinear")
"""Node-level predictors without hidden layers, which ignore the
``predictor_hidden``, ``predictor_layers`` and ``predictor_dropout`` settings."""

COMPLETION_SETTINGS = ("ncn_completion_scale", "ncn_completion_offset",
                       "ncn_completion_threshold", "ncn_completion_alpha")
"""The settings of NCNC's completion, read only with ``ncn_completion``."""

ENCODER_SETTINGS = ("hidden_channels", "encoder_layers", "dropout", "activate_last_layer",
                    "encoder_relu", "encoder_residual", "encoder_layer_norm",
                    "encoder_edge_dropout", "encoder_initial_residual")
"""The settings of the encoder's layers, which ``encoder: none`` has none of."""


class Part(NamedTuple):
    """A part of the method a config may leave out, and the settings that
    only it reads.

    Attributes:
        choices (tuple): The settings that choose whether it is in.
        settings (tuple): Its own settings.
        left_out (callable): Whether a config leaves it out.
    """

    choices: tuple[str, ...]
    settings: tuple[str, ...]
    left_out: Callable[[PLNLPConfig], bool]


PARTS = (
    Part(("walk_length",), ("walk_starts", "walk_rounds", "walk_positives"),
         lambda c: not c.uses_random_walk),
    Part(("node_input",), ("feature_categories",), lambda c: c.node_input == "embedding"),
    Part(("node_input", "feature_categories"), ("embedding_dim", "embedding_init"),
         lambda c: c.node_input == "features" and c.feature_categories is None),
    Part(("input_projection",), ("projection_dropout",), lambda c: c.input_projection is None),
    Part(("encoder",), ENCODER_SETTINGS, lambda c: c.encoder == "none"),
    Part(("encoder",), ("activate_last_layer", "encoder_layer_norm", "encoder_relu"),
         lambda c: c.encoder in WEIGHT_FREE_ENCODERS),
    Part(("encoder",), ("diffusion_hops",), lambda c: c.encoder != "agdn"),
    Part(("encoder",), ("encoder_edge_dropout",),
         lambda c: c.encoder not in EDGE_DROPPING_ENCODERS),
    Part(("encoder_level",), tuple(EDGE_LEVEL_SETTINGS), lambda c: c.encoder_level == "node"),
    Part(("encoder_level", "encoder"), ("node_target_edge_removal",),
         lambda c: c.encoder_level != "node" or c.encoder == "none"),
    Part(("encoder_level", "target_edge_removal", "node_target_edge_removal"),
         ("target_removal_limit",), lambda c: not removes_target_edges(c)),
    Part(("predictor",), tuple(NCN_SETTINGS), lambda c: c.predictor != "ncn"),
    Part(("ncn_completion",), COMPLETION_SETTINGS, lambda c: not c.ncn_completion),
    Part(("predictor",), ("edge_counts", "edge_path_length"), lambda c: c.predictor != "mlp"),
    Part(("predictor", "encoder_level"), ("predictor_residual",),
         lambda c: c.predictor != "mlp" or c.encoder_level != "node"),
    Part(("predictor",), ("predictor_hidden", "predictor_dropout"),
         lambda c: c.predictor in LAYERLESS_PREDICTORS),
    Part(("predictor",), ("predictor_layers",),
         lambda c: c.predictor in (*LAYERLESS_PREDICTORS, "ncn")),
    Part(("loss",), ("edge_margin",),
         lambda c: c.loss not in WEIGHTED_LOSSES and not is_import_path(c.loss)),
    Part(("sampler",), ("degree_power",), lambda c: c.sampler != "local"),
    Part(("sampler",), ("candidate_pool",),
         lambda c: not is_import_path(c.sampler) and not SAMPLER_CHOICES.get(c.sampler)),
    Part(("sampler",), ("generator_dim", "generator_lr"), lambda c: c.sampler != "adversarial"),
    Part(("heart_negatives",), ("heart_mode", "heart_files"), lambda c: not c.heart_negatives),
)
"""The parts a config may leave out (random walks, an embedding, the
input projection, the encoder's layers, the edge level, NCN, the edge MLP's counts, a predictor's
MLP, weighted margins, a sampler's own settings, HeaRT's evaluation): a run
that leaves a part out logs none of its settings. A part of one's own keeps
the settings it may read (``candidate_pool``, ``edge_margin``)."""


def removes_target_edges(config: PLNLPConfig) -> bool:
    """Whether training encodes each step without its positive edges: the
    edge level's ``target_edge_removal``, the node level's
    ``node_target_edge_removal``."""
    if config.encoder_level == "edge":
        return config.target_edge_removal
    return config.node_target_edge_removal


def _parts_named(settings: Mapping[str, object]) -> dict[str, object]:
    """``settings`` with each ``<kind>_options.<key>`` set in its kind's
    mapping (over the mapping given whole) and each part given as a class
    named by its import path."""
    named = {key: import_path_of(key, value) if key in PART_KINDS and isinstance(value, type)
             else value for key, value in settings.items() if "." not in key}
    for key, value in settings.items():
        prefix, _, option = key.partition(".")
        if option and prefix in OPTION_SETTINGS and isinstance(named.get(prefix, {}), dict):
            named[prefix] = {**named.get(prefix, {}), option: value}
        elif option:
            named[key] = value
    return named


def _flat_options(settings: dict[str, object]) -> dict[str, object]:
    """``settings`` with each part's own settings as ``<kind>_options.<key>``,
    one entry a key (as MLflow logs params)."""
    flat = {}
    for key, value in settings.items():
        if key in OPTION_SETTINGS:
            flat.update({f"{key}.{option}": each for option, each in value.items()})
        else:
            flat[key] = value
    return flat


def _as_declared(value: object, hint: object) -> object:
    """An int given for a float setting, as a float; a list for a tuple
    setting, as a tuple."""
    if isinstance(value, list):
        return tuple(value)
    floats = float in (typing.get_args(hint) or (hint,))
    return float(value) if floats and isinstance(value, int) and not isinstance(value, bool) \
        else value
