"""Every setting of a PLNLP experiment, with the checks that refuse
impossible ones before any work starts. The checks read the names of the
method's parts from :mod:`plnlp_core.choices`, not their implementations, so
that refusing a setting imports no torch."""
import dataclasses
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from plnlp_core.choices import (
    EDGE_PREDICTOR_CHOICES,
    EMBEDDING_INITS,
    ENCODER_CHOICES,
    ENCODER_LEVEL_CHOICES,
    LOSS_CHOICES,
    NEGATIVE_MODES,
    NODE_INPUTS,
    PATH_LENGTHS,
    PREDICTOR_CHOICES,
    SAMPLER_CHOICES,
    WEIGHT_FREE_ENCODERS,
    WEIGHTED_LOSSES,
)
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.errors import PLNLPError

WALK_STARTS = ("all", "train_endpoints", "edge_endpoints")
HEART_MODES = ("heart", "heart_filtered")
"""``heart_mode``: HeaRT's protocol, or every known link masked
(:data:`plnlp_core.scoring.hard_negatives.HARD_NEGATIVE_MODES`)."""
WALK_POSITIVES = ("union", "walks")
EDGE_MARGINS = ("normalized", "raw")
LR_DECAYS = ("none", "linear")
SELECT_BEST = ("first", "last")
PRECISIONS = ("fp32", "tf32", "bf16", "auto")


@dataclass(frozen=True)
class PLNLPConfig:
    """The resolved settings of one experiment; docs/settings.md describes each."""

    dataset: str = "ddi"
    # encoder (§4.1)
    encoder: str = "sage"
    node_input: str = "embedding"
    feature_categories: int | None = None  # None: the features used raw
    embedding_dim: int = 256
    embedding_init: str = "xavier"
    input_dropout: float = 0.0
    hidden_channels: int = 256
    encoder_layers: int = 2
    dropout: float = 0.0
    activate_last_layer: bool = False
    encoder_relu: bool = True
    encoder_residual: bool = False
    encoder_layer_norm: bool = False
    encoder_edge_dropout: float = 0.0
    encoder_initial_residual: float = 0.0
    diffusion_hops: int = 3  # encoder agdn
    # node or edge level (§4.1's ENE, the NCN form); the edge level's own settings
    # (EDGE_LEVEL_SETTINGS) are refused at the node level, NCN's (NCN_SETTINGS) with predictor mlp
    encoder_level: str = "node"
    node_target_edge_removal: bool = False  # the edge level's is target_edge_removal
    target_edge_removal: bool = True
    edge_dropout: float = 0.0
    edge_path_length: int = 2
    edge_counts: bool | None = None  # None: on with predictor mlp, off with ncn
    ncn_xlin: bool = False
    ncn_tail_activation: bool = False
    ncn_two_layer_output: bool = False
    ncn_beta: float = 1.0
    # predictor (§4.2)
    predictor: str = "dot"
    predictor_hidden: int = 256
    predictor_layers: int = 2
    predictor_dropout: float = 0.0
    predictor_residual: bool = False
    force_symmetric_predictor: bool = False
    # objective (§4.3)
    loss: str = "auc"
    l2: float = 0.0
    edge_margin: str = "normalized"
    # negative sampling (§4.4)
    sampler: str = "global"
    num_neg: int = 1
    negatives: str = "shared"
    degree_power: float = 0.0
    candidate_pool: int = 32  # hard and adversarial samplers
    generator_dim: int = 64  # adversarial sampler
    generator_lr: float = 0.01
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
        values of the wrong type."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        hints = typing.get_type_hints(cls)
        for key, value in settings.items():
            if key not in fields:
                raise PLNLPError(
                    f"unknown setting {key!r}; valid settings are: {', '.join(fields)}."
                )
            _check_type(key, value, hints[key])
        values = {k: _as_declared(v, hints[k]) for k, v in settings.items()}
        return cls(**values)

    @classmethod
    def setting_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def replace(self, **changes: object) -> "PLNLPConfig":
        return type(self).from_mapping({**dataclasses.asdict(self), **changes})

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

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
        return {key: getattr(self, key) for key in keys if key not in unused}

    def validate(self, info: DatasetInfo | None = None) -> DatasetInfo:
        """Refuses impossible settings with one sentence; returns the
        dataset's description: ``info`` for a graph outside OGB's registry
        (a user's own), else the registered dataset ``self.dataset``."""
        info = info or DATASETS.get(self.dataset)
        ENCODER_CHOICES.get(self.encoder)
        LOSS_CHOICES.get(self.loss)
        SAMPLER_CHOICES.get(self.sampler)
        for key, choices in (("node_input", NODE_INPUTS), ("walk_starts", WALK_STARTS),
                             ("walk_positives", WALK_POSITIVES), ("edge_margin", EDGE_MARGINS),
                             ("negatives", NEGATIVE_MODES), ("lr_decay", LR_DECAYS),
                             ("select_best", SELECT_BEST), ("precision", PRECISIONS),
                             ("embedding_init", EMBEDDING_INITS),
                             ("encoder_level", ENCODER_LEVEL_CHOICES),
                             ("heart_mode", HEART_MODES)):
            _check_choice(key, getattr(self, key), choices)
        for key in ("embedding_dim", "hidden_channels", "encoder_layers", "predictor_hidden",
                    "predictor_layers", "num_neg", "epochs", "batch_size", "eval_every",
                    "eval_batch_size", "walk_rounds", "max_batches_per_epoch",
                    "checkpoint_every", "candidate_pool", "generator_dim", "diffusion_hops"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise PLNLPError(f"{key} must be at least 1, got {getattr(self, key)}.")
        if self.feature_categories is not None and self.feature_categories < 2:
            raise PLNLPError(f"feature_categories must be at least 2 or null (features used "
                             f"raw), got {self.feature_categories}.")
        if self.predictor_lr is not None and self.predictor_lr <= 0:
            raise PLNLPError(f"predictor_lr must be positive or null (lr), "
                             f"got {self.predictor_lr}.")
        if self.clip_grad_norm is not None and self.clip_grad_norm <= 0:
            raise PLNLPError(f"clip_grad_norm must be positive or null (off), "
                             f"got {self.clip_grad_norm}.")
        for key in ("dropout", "predictor_dropout", "input_dropout", "edge_dropout",
                    "encoder_edge_dropout"):
            if not 0.0 <= getattr(self, key) < 1.0:
                raise PLNLPError(f"{key} must be in [0, 1), got {getattr(self, key)}.")
        for key in ("lr", "l2", "generator_lr"):
            if getattr(self, key) < 0 or (key != "l2" and getattr(self, key) == 0):
                raise PLNLPError(f"{key} must be positive, got {getattr(self, key)}.")
        if self.heart_negatives < 0 or self.heart_negatives % 2:
            raise PLNLPError(
                f"heart_negatives must be 0 (off) or an even number of hard negatives per "
                f"positive, half replacing each endpoint (HeaRT uses 500), got "
                f"{self.heart_negatives}."
            )
        self._validate_heart()
        if self.walk_length < 0:
            raise PLNLPError(f"walk_length must be 0 (off) or positive, got {self.walk_length}.")
        if not self.uses_random_walk and (self.walk_rounds > 1 or self.walk_positives == "walks"):
            raise PLNLPError(
                "walk_rounds and walk_positives=walks need random walks; set walk_length to a "
                "positive length or leave them at their defaults."
            )
        self._validate_encoder_options()
        self._validate_edge_level()
        self._validate_against(info)
        return info

    def _validate_heart(self) -> None:
        if self.heart_files is not None and not self.heart_negatives:
            raise PLNLPError(
                "heart_files needs heart_negatives set to the files' number of negatives per "
                "positive (HeaRT's: 500).")
        if self.heart_files is not None and self.heart_mode != "heart":
            raise PLNLPError(
                "heart_files are HeaRT's own negatives (heart_mode=heart), and heart_filtered "
                "builds its own; leave heart_files out or set heart_mode=heart.")

    def _validate_encoder_options(self) -> None:
        if self.encoder_initial_residual < 0:
            raise PLNLPError(f"encoder_initial_residual must be 0 (off) or positive, "
                             f"got {self.encoder_initial_residual}.")
        for key in ("encoder_layer_norm", "activate_last_layer"):
            if getattr(self, key) and self.encoder in WEIGHT_FREE_ENCODERS:
                raise PLNLPError(f"{key} acts at the encoder's ReLUs, and encoder "
                                 f"{self.encoder!r} has no weights and no ReLU; set encoder=gcn "
                                 f"or sage, or leave {key} at false.")
        if self.encoder_edge_dropout > 0 and self.encoder not in EDGE_DROPPING_ENCODERS:
            raise PLNLPError(
                f"encoder_edge_dropout thins each direction of an edge by itself, which encoder "
                f"{self.encoder!r} cannot read (sage assumes a symmetric graph, gat ignores "
                f"edge values); set encoder to one of {', '.join(EDGE_DROPPING_ENCODERS)}, or "
                "leave encoder_edge_dropout at 0."
            )

    def _validate_predictor_residual(self, input_size: int) -> None:
        """Refuses ``predictor_residual`` off the node level's ``mlp``, or
        with hidden layers of another width than the node vectors."""
        if not self.predictor_residual:
            return
        if self.predictor != "mlp" or self.encoder_level != "node":
            raise PLNLPError("predictor_residual adds h_i * h_j to each hidden layer of the node "
                             "level's predictor mlp; set predictor=mlp at encoder_level node, or "
                             "leave predictor_residual at false.")
        width = input_size if self.encoder == "none" else self.hidden_channels
        if self.predictor_layers > 1 and self.predictor_hidden != width:
            raise PLNLPError(f"predictor_residual adds h_i * h_j ({width} channels) to each hidden "
                             f"layer of the predictor ({self.predictor_hidden}); set "
                             f"predictor_hidden to {width}, or leave predictor_residual at false.")

    def _validate_edge_level(self) -> None:
        if self.edge_path_length not in PATH_LENGTHS:
            raise PLNLPError(
                f"edge_path_length must be 2 (common neighbours) or 3 (also paths of length 3), "
                f"got {self.edge_path_length}."
            )
        if self.node_target_edge_removal and (self.encoder_level != "node"
                                              or self.encoder == "none"):
            raise PLNLPError(
                "node_target_edge_removal hides each step's positive edges from the node level's "
                "encoder; set encoder_level=node with an encoder other than none (the edge level "
                "has target_edge_removal), or leave node_target_edge_removal at false."
            )
        if self.encoder_level == "node":
            if (self.predictor in EDGE_PREDICTOR_CHOICES
                    and self.predictor not in PREDICTOR_CHOICES):
                raise PLNLPError(
                    f"predictor {self.predictor!r} reads the pair's common neighbours, which only "
                    "encoder_level edge gives; set encoder_level=edge."
                )
            PREDICTOR_CHOICES.get(self.predictor)
            self._refuse_changed(EDGE_LEVEL_SETTINGS, "encoder_level edge", "encoder_level=edge")
            return
        if self.predictor not in EDGE_PREDICTOR_CHOICES:
            raise PLNLPError(
                f"encoder_level edge scores pairs with an edge-level predictor, so predictor "
                f"{self.predictor!r} cannot serve it; set predictor=mlp or ncn."
            )
        if self.predictor == "mlp":
            self._refuse_changed(NCN_SETTINGS, "predictor ncn", "predictor=ncn")
        elif self.edge_counts or self.edge_path_length != 2:
            raise PLNLPError(
                "edge_counts and edge_path_length 3 add count features to predictor mlp, and "
                "predictor ncn has none; set predictor=mlp, or leave edge_counts unset and "
                "edge_path_length at 2."
            )

    def _validate_categories(self, info: DatasetInfo) -> None:
        categories = self.feature_categories
        if categories is None:
            return
        if self.node_input == "embedding":
            raise PLNLPError("feature_categories embeds the node features, which node_input "
                             "embedding leaves out; set node_input=features or both, or leave "
                             "feature_categories at null.")
        if info.feature_dim not in (1, categories):
            raise PLNLPError(
                f"feature_categories {categories} reads the node features as {categories} "
                f"one-hot columns or one integer column, and {info.ogb_name} has "
                f"{info.feature_dim}; set feature_categories to {info.feature_dim} (one-hot) or "
                "leave it at null."
            )

    def _refuse_changed(self, defaults: Mapping[str, object], scope: str, fix: str) -> None:
        """Refuses the first of ``defaults`` (setting to default) that is
        set otherwise: it applies to ``scope`` only."""
        for key, default in defaults.items():
            if getattr(self, key) != default:
                shown = "null" if default is None else str(default).lower()
                raise PLNLPError(f"{key} applies to {scope} only; set {fix} or leave {key} at "
                                 f"{shown}.")

    def validate_graph(self, num_nodes: int,
                       categories: dict[str, float | int | None] | None = None) -> None:
        """Refuses settings the loaded graph cannot serve, before training:
        ``categories`` is what its node features hold as one categorical
        column (:func:`~plnlp_core.nn.node_input.summarize_categories`)."""
        from plnlp_core.nn.node_input import refuse_categories  # torch, once a graph is loaded
        from plnlp_core.sampling import check_pool_size

        if SAMPLER_CHOICES.get(self.sampler):
            check_pool_size(self.candidate_pool, num_nodes)
        if self.feature_categories is not None and categories is not None:
            refuse_categories(categories, self.feature_categories)

    def _validate_against(self, info: DatasetInfo) -> None:
        feature_size = info.feature_dim if self.feature_categories is None else self.embedding_dim
        input_size = (self.embedding_dim * (self.node_input != "features")
                      + feature_size * (self.node_input != "embedding"))
        if self.encoder in WEIGHT_FREE_ENCODERS and input_size != self.hidden_channels:
            raise PLNLPError(
                f"encoder {self.encoder} has no weights, so the node input's size ({input_size}) "
                f"must equal hidden_channels ({self.hidden_channels}); set embedding_dim to "
                f"{self.hidden_channels} with node_input=embedding."
            )
        if (self.encoder_initial_residual and self.encoder != "none"
                and input_size != self.hidden_channels):
            raise PLNLPError(
                f"encoder_initial_residual adds the node input ({input_size} channels) to every "
                f"encoder layer's output ({self.hidden_channels}); set embedding_dim to "
                f"{self.hidden_channels} with node_input=embedding, or leave "
                "encoder_initial_residual at 0."
            )
        if self.node_input != "embedding" and info.feature_dim == 0:
            raise PLNLPError(
                f"node_input {self.node_input!r} needs node features, and {info.ogb_name} has "
                "none; set node_input=embedding."
            )
        self._validate_categories(info)
        self._validate_predictor_residual(input_size)
        if info.directed and self.encoder_level == "edge" and not self.force_symmetric_predictor:
            raise PLNLPError(
                f"encoder_level edge is symmetric in i and j (common neighbours in the undirected "
                f"graph) but {info.ogb_name} is directed; set force_symmetric_predictor=true to "
                "use it anyway."
            )
        predictors = PREDICTOR_CHOICES if self.encoder_level == "node" else EDGE_PREDICTOR_CHOICES
        symmetric = predictors.get(self.predictor)
        if info.directed and symmetric and not self.force_symmetric_predictor:
            raise PLNLPError(
                f"predictor {self.predictor!r} is symmetric but {info.ogb_name} is directed; use "
                "bilinear or mlp_concat, or set force_symmetric_predictor=true."
            )
        if (self.loss in WEIGHTED_LOSSES and self.edge_margin == "raw"
                and not (self.uses_random_walk or info.edge_weights)):
            raise PLNLPError(
                f"loss {self.loss!r} with edge_margin raw needs edge weights, and "
                f"{info.ogb_name} has none; set edge_margin=normalized, or walk_length to a "
                "positive length to add random-walk pairs."
            )
        if self.min_train_year is not None and not info.edge_years:
            raise PLNLPError(
                f"min_train_year filters edges by year, and {info.ogb_name} has no edge years; "
                "remove the setting."
            )


EDGE_DROPPING_ENCODERS = ("gcn", "sum", "pure_gcn")
"""Encoders that read the adjacency's values, so that encoder_edge_dropout
can thin them."""

EDGE_LEVEL_SETTINGS = {"target_edge_removal": True, "edge_dropout": 0.0, "edge_path_length": 2,
                       "edge_counts": None, "ncn_xlin": False, "ncn_tail_activation": False,
                       "ncn_two_layer_output": False, "ncn_beta": 1.0}
"""The edge level's settings and their defaults, which the node level refuses
other values of."""

NCN_SETTINGS = {key: EDGE_LEVEL_SETTINGS[key] for key in EDGE_LEVEL_SETTINGS
                if key.startswith("ncn_")}
"""The settings of ``predictor: ncn``, refused with ``predictor: mlp``."""


GRAPH_SETTINGS = ("dataset", "valid_as_input", "min_train_year")
"""The settings of the observed graph a model starts from."""

HEURISTIC_SETTINGS = (*GRAPH_SETTINGS, "heart_negatives", "heart_mode", "heart_files")
"""All that a heuristic's run reads: its graph, and whether it is scored on
HeaRT's negatives too."""

LAYERLESS_PREDICTORS = ("dot", "bilinear")
"""Node-level predictors without hidden layers, which ignore the
``predictor_hidden``, ``predictor_layers`` and ``predictor_dropout`` settings."""

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
    Part(("encoder",), ENCODER_SETTINGS, lambda c: c.encoder == "none"),
    Part(("encoder",), ("activate_last_layer", "encoder_layer_norm", "encoder_relu"),
         lambda c: c.encoder in WEIGHT_FREE_ENCODERS),
    Part(("encoder",), ("diffusion_hops",), lambda c: c.encoder != "agdn"),
    Part(("encoder",), ("encoder_edge_dropout",),
         lambda c: c.encoder not in EDGE_DROPPING_ENCODERS),
    Part(("encoder_level",), tuple(EDGE_LEVEL_SETTINGS), lambda c: c.encoder_level == "node"),
    Part(("encoder_level", "encoder"), ("node_target_edge_removal",),
         lambda c: c.encoder_level != "node" or c.encoder == "none"),
    Part(("predictor",), tuple(NCN_SETTINGS), lambda c: c.predictor != "ncn"),
    Part(("predictor",), ("edge_counts", "edge_path_length"), lambda c: c.predictor != "mlp"),
    Part(("predictor", "encoder_level"), ("predictor_residual",),
         lambda c: c.predictor != "mlp" or c.encoder_level != "node"),
    Part(("predictor",), ("predictor_hidden", "predictor_dropout"),
         lambda c: c.predictor in LAYERLESS_PREDICTORS),
    Part(("predictor",), ("predictor_layers",),
         lambda c: c.predictor in (*LAYERLESS_PREDICTORS, "ncn")),
    Part(("loss",), ("edge_margin",), lambda c: c.loss not in WEIGHTED_LOSSES),
    Part(("sampler",), ("degree_power",), lambda c: c.sampler != "local"),
    Part(("sampler",), ("candidate_pool",), lambda c: not SAMPLER_CHOICES.get(c.sampler)),
    Part(("sampler",), ("generator_dim", "generator_lr"), lambda c: c.sampler != "adversarial"),
    Part(("heart_negatives",), ("heart_mode", "heart_files"), lambda c: not c.heart_negatives),
)
"""The parts a config may leave out (random walks, an embedding, the
encoder's layers, the edge level, NCN, the edge MLP's counts, a predictor's
MLP, weighted margins, a sampler's own settings, HeaRT's evaluation): a run
that leaves a part out logs none of its settings."""


def _check_choice(key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PLNLPError(f"unknown {key} {value!r}; choose one of: {', '.join(choices)}.")


def _as_declared(value: object, hint: object) -> object:
    """An int given for a float setting, as a float."""
    floats = float in (typing.get_args(hint) or (hint,))
    return float(value) if floats and isinstance(value, int) and not isinstance(value, bool) \
        else value


def _check_type(key: str, value: object, hint: object) -> None:
    allowed = typing.get_args(hint) or (hint,)
    if float in allowed:
        allowed = (*allowed, int)
    ok = any(
        value is None if t is type(None) else isinstance(value, t) and not (
            isinstance(value, bool) and t is not bool)
        for t in allowed
    )
    if not ok:
        names = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
        raise PLNLPError(f"setting {key} must be {names}, got {value!r}.")
