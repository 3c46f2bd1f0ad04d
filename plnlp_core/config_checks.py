"""The checks that refuse a :class:`~plnlp_core.config.PLNLPConfig`'s
impossible settings, each with one sentence that says how to fix it, before
any work starts: each setting as the config is built (:func:`check_setting`),
the settings together on a dataset (:func:`check_settings`, which
``PLNLPConfig.validate`` runs) and on the loaded graph
(:func:`check_graph`). They read the names of the method's parts from
:mod:`plnlp_core.choices`, not their implementations, so that refusing a
setting imports no torch. A part named by import path is checked for its
spelling here; :func:`plnlp_core.preflight.checks.check_config` also imports it
and tries it on a tiny graph (torch: only a config that names one pays for it)."""
import typing
from collections.abc import Mapping

from plnlp_core.choices import (
    EDGE_DROPPING_ENCODERS,
    EDGE_LEVEL_SETTINGS,
    EDGE_MARGINS,
    EDGE_PREDICTOR_CHOICES,
    EMBEDDING_INITS,
    ENCODER_CHOICES,
    ENCODER_LEVEL_CHOICES,
    HEART_MODES,
    LOSS_CHOICES,
    LR_DECAYS,
    NCN_SETTINGS,
    NEGATIVE_MODES,
    NODE_INPUTS,
    PART_KINDS,
    PATH_LENGTHS,
    PRECISIONS,
    PREDICTOR_CHOICES,
    SAMPLED_ENCODERS,
    SAMPLER_CHOICES,
    SELECT_BEST,
    WALK_POSITIVES,
    WALK_STARTS,
    WEIGHT_FREE_ENCODERS,
    WEIGHTED_LOSSES,
)
from plnlp_core.data.datasets import DATASETS, DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.parts.import_path import check_spelling, is_import_path, with_article
from plnlp_core.registry import Registry


class CheckedSettings:
    """What :class:`~plnlp_core.config.PLNLPConfig` takes from its checks:
    ``validate`` on a dataset and ``validate_graph`` on the loaded graph."""

    def validate(self, info: DatasetInfo | None = None) -> DatasetInfo:
        """Refuses impossible settings with one sentence
        (:func:`~plnlp_core.config_checks.check_settings`); returns the
        dataset's description: ``info`` for a graph outside OGB's registry
        (a user's own), else the registered dataset ``self.dataset``."""
        info = info or DATASETS.get(self.dataset)
        check_settings(self, info)
        return info

    def validate_graph(self, num_nodes: int,
                       categories: dict[str, float | int | None] | None = None) -> None:
        """Refuses settings the loaded graph cannot serve, before training
        (:func:`~plnlp_core.config_checks.check_graph`): ``categories`` is
        what its node features hold as one categorical column
        (:func:`~plnlp_core.nn.node_input.summarize_categories`)."""
        check_graph(self, num_nodes, categories)


def check_settings(config: "CheckedSettings", info: DatasetInfo) -> None:
    """Refuses the first impossible setting of ``config`` on the dataset
    ``info`` describes, with one sentence that says how to fix it."""
    for kind, choices in (("encoder", ENCODER_CHOICES), ("loss", LOSS_CHOICES),
                          ("sampler", SAMPLER_CHOICES), ("predictor", None)):
        _check_part(config, kind, choices)
    for key, choices in (("node_input", NODE_INPUTS), ("walk_starts", WALK_STARTS),
                         ("walk_positives", WALK_POSITIVES), ("edge_margin", EDGE_MARGINS),
                         ("negatives", NEGATIVE_MODES), ("lr_decay", LR_DECAYS),
                         ("select_best", SELECT_BEST), ("precision", PRECISIONS),
                         ("embedding_init", EMBEDDING_INITS),
                         ("encoder_level", ENCODER_LEVEL_CHOICES),
                         ("heart_mode", HEART_MODES)):
        _check_choice(key, getattr(config, key), choices)
    for key in ("embedding_dim", "hidden_channels", "encoder_layers", "predictor_hidden",
                "predictor_layers", "num_neg", "epochs", "batch_size", "eval_every",
                "eval_batch_size", "walk_rounds", "max_batches_per_epoch",
                "checkpoint_every", "candidate_pool", "generator_dim", "diffusion_hops",
                "input_projection"):
        if getattr(config, key) is not None and getattr(config, key) < 1:
            raise PLNLPError(f"{key} must be at least 1, got {getattr(config, key)}.")
    if not 0 < config.ncn_completion_threshold <= 1 or config.ncn_completion_alpha < 0:
        raise PLNLPError(f"ncn_completion_threshold must be in (0, 1] and ncn_completion_alpha "
                         f"at least 0, got {config.ncn_completion_threshold} and "
                         f"{config.ncn_completion_alpha}.")
    if config.projection_dropout and config.input_projection is None:
        raise PLNLPError("projection_dropout drops the projected node input, and "
                         "input_projection is null; set input_projection, or leave "
                         "projection_dropout at 0.")
    if config.batch_fraction is not None and not 0 < config.batch_fraction <= 1:
        raise PLNLPError(f"batch_fraction must be in (0, 1] (a batch's least share of an "
                         f"epoch's positives) or null, got {config.batch_fraction}.")
    if not 0 < config.target_removal_limit <= 1:
        raise PLNLPError(f"target_removal_limit must be in (0, 1] (the largest share of the "
                         f"graph's edges a training step removes at once), got "
                         f"{config.target_removal_limit}.")
    if config.feature_categories is not None and config.feature_categories < 2:
        raise PLNLPError(f"feature_categories must be at least 2 or null (features used "
                         f"raw), got {config.feature_categories}.")
    if config.predictor_lr is not None and config.predictor_lr <= 0:
        raise PLNLPError(f"predictor_lr must be positive or null (lr), "
                         f"got {config.predictor_lr}.")
    if config.clip_grad_norm is not None and config.clip_grad_norm <= 0:
        raise PLNLPError(f"clip_grad_norm must be positive or null (off), "
                         f"got {config.clip_grad_norm}.")
    for key in ("dropout", "predictor_dropout", "input_dropout", "edge_dropout",
                "encoder_edge_dropout", "projection_dropout"):
        if not 0.0 <= getattr(config, key) < 1.0:
            raise PLNLPError(f"{key} must be in [0, 1), got {getattr(config, key)}.")
    for key in ("lr", "l2", "generator_lr"):
        if getattr(config, key) < 0 or (key != "l2" and getattr(config, key) == 0):
            raise PLNLPError(f"{key} must be positive, got {getattr(config, key)}.")
    if config.heart_negatives < 0 or config.heart_negatives % 2:
        raise PLNLPError(
            f"heart_negatives must be 0 (off) or an even number of hard negatives per "
            f"positive, half replacing each endpoint (HeaRT uses 500), got "
            f"{config.heart_negatives}."
        )
    _check_heart(config)
    if config.walk_length < 0:
        raise PLNLPError(f"walk_length must be 0 (off) or positive, got {config.walk_length}.")
    if not config.uses_random_walk and (config.walk_rounds > 1 or config.walk_positives == "walks"):
        raise PLNLPError(
            "walk_rounds and walk_positives=walks need random walks; set walk_length to a "
            "positive length or leave them at their defaults."
        )
    _check_encoder_options(config)
    _check_fanouts(config)
    _check_edge_level(config)
    check_against_dataset(config, info)


def names_own_parts(config: "CheckedSettings") -> bool:
    """Whether ``config`` names a part of one's own by import path."""
    return any(is_import_path(getattr(config, kind)) for kind in PART_KINDS)


def _check_part(config: "CheckedSettings", kind: str, choices: Registry | None) -> None:
    """Refuses an unknown built-in name of ``kind`` (checked against
    ``choices``, unless ``None``: the predictor's table depends on the
    level), an import path that is not spelled as one, and settings of a
    part's own for a built-in part."""
    name, options = getattr(config, kind), getattr(config, f"{kind}_options")
    if is_import_path(name):
        check_spelling(kind, name)
        return
    if choices is not None:
        choices.get(name)
    if options:
        raise PLNLPError(f"{kind}_options sets {', '.join(options)} for {kind} {name!r}, a "
                         f"built-in {kind}, which takes its settings from the config's own "
                         f"(docs/settings.md); leave {kind}_options empty, or name "
                         f"{with_article(kind)} of your own by import path.")


def _check_heart(config: "CheckedSettings") -> None:
    if config.heart_files is not None and not config.heart_negatives:
        raise PLNLPError(
            "heart_files needs heart_negatives set to the files' number of negatives per "
            "positive (HeaRT's: 500).")
    if config.heart_files is not None and config.heart_mode != "heart":
        raise PLNLPError(
            "heart_files are HeaRT's own negatives (heart_mode=heart), and heart_filtered "
            "builds its own; leave heart_files out or set heart_mode=heart.")


def _check_fanouts(config: "CheckedSettings") -> None:
    """Refuses ``fanouts`` that are not one positive count per encoder
    layer, or a model that cannot train on a sampled neighbourhood."""
    fanouts = config.fanouts
    if fanouts is None:
        return
    if not fanouts or any(f < 1 for f in fanouts):
        raise PLNLPError(f"fanouts must be positive neighbour counts, one per encoder layer "
                         f"(e.g. [15, 10]), got {list(fanouts)}; or null for full batch.")
    if config.encoder_level != "node" or config.encoder not in SAMPLED_ENCODERS:
        raise PLNLPError(f"fanouts samples the node level's neighbourhoods, which encoder_level "
                         f"{config.encoder_level!r} with encoder {config.encoder!r} cannot use; "
                         f"set encoder_level=node and encoder to one of "
                         f"{', '.join(SAMPLED_ENCODERS)}, or fanouts to null.")
    if len(fanouts) != config.encoder_layers:
        raise PLNLPError(f"fanouts has {len(fanouts)} entries for {config.encoder_layers} encoder "
                         f"layers; give one fanout per layer, e.g. "
                         f"{[15, 10, 5][:config.encoder_layers] or [15]}.")
    for key in ("node_target_edge_removal", "encoder_edge_dropout"):
        if getattr(config, key):
            raise PLNLPError(f"{key} changes the full graph each step, which a sampled step "
                             f"never encodes; leave {key} at its default, or fanouts at null.")


def _check_encoder_options(config: "CheckedSettings") -> None:
    if config.encoder_initial_residual < 0:
        raise PLNLPError(f"encoder_initial_residual must be 0 (off) or positive, "
                         f"got {config.encoder_initial_residual}.")
    for key in ("encoder_layer_norm", "activate_last_layer"):
        if getattr(config, key) and config.encoder in WEIGHT_FREE_ENCODERS:
            raise PLNLPError(f"{key} acts at the encoder's ReLUs, and encoder "
                             f"{config.encoder!r} has no weights and no ReLU; set encoder=gcn "
                             f"or sage, or leave {key} at false.")
    if config.encoder_edge_dropout > 0 and config.encoder not in EDGE_DROPPING_ENCODERS:
        raise PLNLPError(
            f"encoder_edge_dropout thins each direction of an edge by itself, which encoder "
            f"{config.encoder!r} cannot read (sage assumes a symmetric graph, gat ignores "
            f"edge values); set encoder to one of {', '.join(EDGE_DROPPING_ENCODERS)}, or "
            "leave encoder_edge_dropout at 0."
        )


def _check_predictor_residual(config: "CheckedSettings", input_size: int) -> None:
    """Refuses ``predictor_residual`` off the node level's ``mlp``, or
    with hidden layers of another width than the node vectors."""
    if not config.predictor_residual:
        return
    if config.predictor != "mlp" or config.encoder_level != "node":
        raise PLNLPError("predictor_residual adds h_i * h_j to each hidden layer of the node "
                         "level's predictor mlp; set predictor=mlp at encoder_level node, or "
                         "leave predictor_residual at false.")
    width = input_size if config.encoder == "none" else config.hidden_channels
    if config.predictor_layers > 1 and config.predictor_hidden != width:
        raise PLNLPError(f"predictor_residual adds h_i * h_j ({width} channels) to each hidden "
                         f"layer of the predictor ({config.predictor_hidden}); set "
                         f"predictor_hidden to {width}, or leave predictor_residual at false.")


def _check_edge_level(config: "CheckedSettings") -> None:
    if config.edge_path_length not in PATH_LENGTHS:
        raise PLNLPError(
            f"edge_path_length must be 2 (common neighbours) or 3 (also paths of length 3), "
            f"got {config.edge_path_length}."
        )
    if config.node_target_edge_removal and (config.encoder_level != "node"
                                          or config.encoder == "none"):
        raise PLNLPError(
            "node_target_edge_removal hides each step's positive edges from the node level's "
            "encoder; set encoder_level=node with an encoder other than none (the edge level "
            "has target_edge_removal), or leave node_target_edge_removal at false."
        )
    own = is_import_path(config.predictor)
    if config.encoder_level == "node":
        if (config.predictor in EDGE_PREDICTOR_CHOICES
                and config.predictor not in PREDICTOR_CHOICES):
            raise PLNLPError(
                f"predictor {config.predictor!r} reads the pair's common neighbours, which only "
                "encoder_level edge gives; set encoder_level=edge."
            )
        if not own:
            PREDICTOR_CHOICES.get(config.predictor)
        _refuse_changed(config, EDGE_LEVEL_SETTINGS, "encoder_level edge", "encoder_level=edge")
        return
    if own:  # an edge-level predictor of one's own reads neither NCN's settings nor the counts
        _refuse_changed(config, NCN_SETTINGS, "predictor ncn", "predictor=ncn")
        _refuse_changed(config, {"edge_counts": None, "edge_path_length": 2}, "predictor mlp",
                        "predictor=mlp")
        return
    if config.predictor not in EDGE_PREDICTOR_CHOICES:
        raise PLNLPError(
            f"encoder_level edge scores pairs with an edge-level predictor, so predictor "
            f"{config.predictor!r} cannot serve it; set predictor=mlp or ncn."
        )
    if config.predictor == "mlp":
        _refuse_changed(config, NCN_SETTINGS, "predictor ncn", "predictor=ncn")
    elif config.edge_counts or config.edge_path_length != 2:
        raise PLNLPError(
            "edge_counts and edge_path_length 3 add count features to predictor mlp, and "
            "predictor ncn has none; set predictor=mlp, or leave edge_counts unset and "
            "edge_path_length at 2."
        )


def _check_categories(config: "CheckedSettings", info: DatasetInfo) -> None:
    categories = config.feature_categories
    if categories is None:
        return
    if config.node_input == "embedding":
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


def _refuse_changed(config: "CheckedSettings", defaults: Mapping[str, object], scope: str,
                    fix: str) -> None:
    """Refuses the first of ``defaults`` (setting to default) that is
    set otherwise: it applies to ``scope`` only."""
    for key, default in defaults.items():
        if getattr(config, key) != default:
            shown = "null" if default is None else str(default).lower()
            raise PLNLPError(f"{key} applies to {scope} only; set {fix} or leave {key} at "
                             f"{shown}.")


def check_graph(config: "CheckedSettings", num_nodes: int,
                categories: dict[str, float | int | None] | None = None) -> None:
    """Refuses settings the loaded graph cannot serve, before training:
    ``categories`` is what its node features hold as one categorical
    column (:func:`~plnlp_core.nn.node_input.summarize_categories`)."""
    from plnlp_core.nn.node_input import refuse_categories  # torch, once a graph is loaded
    from plnlp_core.sampling import check_pool_size

    if not is_import_path(config.sampler) and SAMPLER_CHOICES.get(config.sampler):
        check_pool_size(config.candidate_pool, num_nodes)
    if config.feature_categories is not None and categories is not None:
        refuse_categories(categories, config.feature_categories)


def check_against_dataset(config: "CheckedSettings", info: DatasetInfo) -> None:
    feature_size = info.feature_dim if config.feature_categories is None else config.embedding_dim
    input_size = config.input_projection or (
        config.embedding_dim * (config.node_input != "features")
        + feature_size * (config.node_input != "embedding"))
    if config.encoder in WEIGHT_FREE_ENCODERS and input_size != config.hidden_channels:
        raise PLNLPError(
            f"encoder {config.encoder} has no weights, so the node input's size ({input_size}) "
            f"must equal hidden_channels ({config.hidden_channels}); set embedding_dim to "
            f"{config.hidden_channels} with node_input=embedding, or input_projection to "
            f"{config.hidden_channels}."
        )
    if (config.encoder_initial_residual and config.encoder != "none"
            and input_size != config.hidden_channels):
        raise PLNLPError(
            f"encoder_initial_residual adds the node input ({input_size} channels) to every "
            f"encoder layer's output ({config.hidden_channels}); set embedding_dim to "
            f"{config.hidden_channels} with node_input=embedding, or leave "
            "encoder_initial_residual at 0."
        )
    if config.node_input != "embedding" and info.feature_dim == 0:
        raise PLNLPError(
            f"node_input {config.node_input!r} needs node features, and {info.ogb_name} has "
            "none; set node_input=embedding."
        )
    _check_categories(config, info)
    _check_predictor_residual(config, input_size)
    if info.directed and config.encoder_level == "edge" and not config.force_symmetric_predictor:
        raise PLNLPError(
            f"encoder_level edge is symmetric in i and j (common neighbours in the undirected "
            f"graph) but {info.ogb_name} is directed; set force_symmetric_predictor=true to "
            "use it anyway."
        )
    if not is_import_path(config.predictor):  # one's own: checked once imported
        predictors = PREDICTOR_CHOICES if config.encoder_level == "node" \
            else EDGE_PREDICTOR_CHOICES
        check_symmetry(config, info, predictors.get(config.predictor))
    check_margins(config, info, config.loss in WEIGHTED_LOSSES)
    if config.min_train_year is not None and not info.edge_years:
        raise PLNLPError(
            f"min_train_year filters edges by year, and {info.ogb_name} has no edge years; "
            "remove the setting."
        )


def check_symmetry(config: "CheckedSettings", info: DatasetInfo, symmetric: bool) -> None:
    """Refuses a ``symmetric`` predictor on a directed graph, unless forced."""
    if info.directed and symmetric and not config.force_symmetric_predictor:
        raise PLNLPError(
            f"predictor {config.predictor!r} is symmetric but {info.ogb_name} is directed; use "
            "bilinear or mlp_concat, or set force_symmetric_predictor=true."
        )


def check_margins(config: "CheckedSettings", info: DatasetInfo, weighted: bool) -> None:
    """Refuses raw margins for a ``weighted`` loss on a graph without weights."""
    if (weighted and config.edge_margin == "raw"
            and not (config.uses_random_walk or info.edge_weights)):
        raise PLNLPError(
            f"loss {config.loss!r} with edge_margin raw needs edge weights, and "
            f"{info.ogb_name} has none; set edge_margin=normalized, or walk_length to a "
            "positive length to add random-walk pairs."
        )


def _check_choice(key: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise PLNLPError(f"unknown {key} {value!r}; choose one of: {', '.join(choices)}.")


def check_setting(key: str, value: object, hints: Mapping[str, object]) -> None:
    """Refuses a setting ``key`` a config does not have (``hints``: each
    setting's declared type, in the dataclass's order) or a ``value`` of
    another type than declared."""
    if key not in hints:
        raise PLNLPError(f"unknown setting {key!r}; valid settings are: {', '.join(hints)}.")
    check_type(key, value, hints[key])


def check_type(key: str, value: object, hint: object) -> None:
    allowed = (hint,) if typing.get_origin(hint) is dict else typing.get_args(hint) or (hint,)
    if float in allowed:
        allowed = (*allowed, int)
    ok = any(_is_of(value, t) for t in allowed)
    if not ok:
        names = " or ".join(_type_name(t) for t in allowed)
        raise PLNLPError(f"setting {key} must be {names}, got {value!r}.")


def _is_of(value: object, hint: object) -> bool:
    """Whether ``value`` is of the declared ``hint``: ``None`` for null, a
    list or tuple of ints for ``tuple[int, ...]``, no bool for a number."""
    if hint is type(None):
        return value is None
    if typing.get_origin(hint) is tuple:
        return isinstance(value, list | tuple) and all(_is_of(v, int) for v in value)
    if typing.get_origin(hint) is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    return isinstance(value, hint) and not (isinstance(value, bool) and hint is not bool)


def _type_name(hint: object) -> str:
    if hint is type(None):
        return "null"
    if typing.get_origin(hint) is dict:
        return "a mapping of names to values"
    return "a list of integers" if typing.get_origin(hint) is tuple else hint.__name__
