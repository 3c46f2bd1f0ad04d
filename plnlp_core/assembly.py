"""The one place that maps a :class:`PLNLPConfig` onto the method's parts:
the model (node input, encoder, predictor, node or edge level), the
negative sampler, the step's loss and options, and the training graph.
The parts themselves take plain keyword arguments. A part the config names
by import path gets the arguments its built-in kin gets, and its own
settings (``<kind>_options``), as :mod:`plnlp_core.parts.kinds` says."""
import torch
from torch import Tensor, nn

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.edge_set import EdgeSet
from plnlp_core.graph import (
    TrainingGraph,
    WalkRounds,
    append_pairs,
    build_adjacency,
    normalized_margins,
    select_training_edges,
)
from plnlp_core.losses import LOSSES, WEIGHTED_LOSSES, LossFn
from plnlp_core.nn import (
    EDGE_PREDICTORS,
    ENCODER_LEVELS,
    GNNEncoder,
    NodeInput,
    NodeLevelWithoutTargets,
    PLNLPModel,
)
from plnlp_core.nn.edge_level.completion import Completion
from plnlp_core.nn.model import unwrap
from plnlp_core.parts.import_path import is_import_path
from plnlp_core.parts.kinds import ENCODER, LOSS, SAMPLER, kind_of
from plnlp_core.random_walk import walk_round, walk_starts
from plnlp_core.sampling import SAMPLERS, NegativeSampler
from plnlp_core.sparse_adam import DenseAndSparseAdam, sparse_parameters

LAYER_OPTIONS = {"agdn": lambda config: {"hops": config.diffusion_hops}}
"""The encoder layers' own settings, by encoder name."""


def build_model(config: PLNLPConfig, info: DatasetInfo, num_nodes: int) -> PLNLPModel:
    """The encoder and predictor ``config`` names, sized for the dataset, at
    the node or edge level (``encoder_level``)."""
    sampled = config.fanouts is not None
    node_input = NodeInput(config.node_input, num_nodes, config.embedding_dim, info.feature_dim,
                           config.embedding_init, config.input_dropout, config.feature_categories,
                           sparse=sampled, projection=config.input_projection,
                           projection_dropout=config.projection_dropout)
    encoder = GNNEncoder(
        encoder_layer(config), node_input.out_channels, config.hidden_channels,
        config.encoder_layers, config.dropout, config.activate_last_layer,
        config.encoder_residual, config.encoder_layer_norm, config.encoder_edge_dropout,
        config.encoder_initial_residual, layer_options(config), config.encoder_relu,
    )
    if sampled:
        encoder.stop_caching()  # every step's graph is another sample
    level, arguments = model_level(config, encoder)
    return level(node_input, encoder, **arguments)


def model_level(config: PLNLPConfig, encoder: GNNEncoder
                ) -> tuple[type[PLNLPModel], dict[str, object]]:
    """The model class of ``config.encoder_level`` and its arguments past
    the node input and the encoder: the node level trained without each
    step's positives (``node_target_edge_removal``) is
    :class:`NodeLevelWithoutTargets`, which removes them as the edge level
    does, within ``target_removal_limit``."""
    removal = {"removal_limit": config.target_removal_limit}
    if config.encoder_level == "edge":
        return ENCODER_LEVELS.get("edge"), {
            "predictor": build_edge_predictor(config, encoder.out_channels),
            "target_edge_removal": config.target_edge_removal,
            "edge_dropout": config.edge_dropout, **removal}
    arguments = {
        "predictor": own_predictor(config, encoder.out_channels)
        if is_import_path(config.predictor) else config.predictor,
        "predictor_hidden": config.predictor_hidden,
        "predictor_layers": config.predictor_layers,
        "predictor_dropout": config.predictor_dropout,
        "predictor_residual": config.predictor_residual,
    }
    if config.node_target_edge_removal:
        return NodeLevelWithoutTargets, {**arguments, **removal}
    return ENCODER_LEVELS.get(config.encoder_level), arguments


def encoder_layer(config: PLNLPConfig) -> str | type[nn.Module]:
    """The encoder's layer: a name of :data:`~plnlp_core.nn.ENCODERS`, or
    the class of one's own ``config.encoder`` names."""
    return ENCODER.resolve(config.encoder) if is_import_path(config.encoder) else config.encoder


def layer_options(config: PLNLPConfig) -> dict[str, object] | None:
    """What each layer of the encoder is built with besides its sizes: a
    built-in layer's own settings (:data:`LAYER_OPTIONS`), or
    ``encoder_options`` for a layer of one's own."""
    if is_import_path(config.encoder):
        return dict(config.encoder_options)
    return LAYER_OPTIONS.get(config.encoder, lambda _: None)(config)


def own_predictor(config: PLNLPConfig, in_channels: int) -> nn.Module:
    """The predictor of one's own ``config.predictor`` names over node
    vectors of size ``in_channels``, at the node or edge level, given what a
    built-in one gets and ``predictor_options``."""
    kind = kind_of("predictor", config.encoder_level)
    given = {"in_channels": in_channels, "hidden_channels": config.predictor_hidden,
             "num_layers": config.predictor_layers, "dropout": config.predictor_dropout}
    return kind.build(kind.resolve(config.predictor), given, config.predictor_options)


def completion(config: PLNLPConfig) -> Completion | None:
    """NCNC's completion as ``config`` sets it (``ncn_completion``), else ``None``."""
    if not config.ncn_completion:
        return None
    return Completion(config.ncn_completion_scale, config.ncn_completion_offset,
                      config.ncn_completion_threshold, config.ncn_completion_alpha)


def build_edge_predictor(config: PLNLPConfig, in_channels: int) -> nn.Module:
    """The edge-level predictor ``config.predictor`` names (``mlp``,
    ``ncn``, or one of one's own) over node vectors of size ``in_channels``."""
    if is_import_path(config.predictor):
        return own_predictor(config, in_channels)
    predictor_arguments = {
        "mlp": {"num_layers": config.predictor_layers, "path_length": config.edge_path_length,
                "counts": config.edge_counts is not False},
        "ncn": {"xlin": config.ncn_xlin, "tail_activation": config.ncn_tail_activation,
                "two_layer_output": config.ncn_two_layer_output, "beta": config.ncn_beta,
                "completion": completion(config)},
    }
    return EDGE_PREDICTORS.get(config.predictor)(
        in_channels, config.predictor_hidden, dropout=config.predictor_dropout,
        **predictor_arguments[config.predictor])


def parameter_groups(model: nn.Module, config: PLNLPConfig) -> list[dict[str, object]]:
    """The optimiser's parameter groups: the predictor's at
    ``predictor_lr`` (NCN's ``--prelr``) and the rest at ``lr``, or one
    group at ``lr`` when ``predictor_lr`` is unset."""
    core = unwrap(model)
    sparse = {id(p) for p in sparse_parameters(core)}
    dense = [p for p in model.parameters() if id(p) not in sparse]
    if config.predictor_lr is None:
        return [{"params": dense, "lr": config.lr}]
    predictor = {id(p) for p in core.predictor.parameters()}
    rest = [p for p in dense if id(p) not in predictor]
    ours = [p for p in dense if id(p) in predictor]
    return [{"params": rest, "lr": config.lr}, {"params": ours, "lr": config.predictor_lr}]


def build_optimizer(model: nn.Module, config: PLNLPConfig) -> torch.optim.Optimizer:
    """Adam over :func:`parameter_groups`, fused into one kernel per step
    when the model is on a GPU: the foreach Adam took a fifth of the GPU
    time of a ddi ``paper`` step in bf16 on an H200 (torch profiler).
    Embedding tables with sparse gradients (``fanouts``) step with
    :class:`~plnlp_core.sparse_adam.RowAdam` beside it (:class:`DenseAndSparseAdam`)."""
    on_gpu = any(p.is_cuda for p in model.parameters())
    sparse = sparse_parameters(unwrap(model))
    if sparse:
        return DenseAndSparseAdam(parameter_groups(model, config), sparse, config.lr,
                                  fused=on_gpu or None)
    return torch.optim.Adam(parameter_groups(model, config), fused=on_gpu or None)


def input_edges(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor | None]:
    """The observed edges training starts from and their weights: training
    edges from ``min_train_year`` on, plus the validation edges when
    ``valid_as_input``."""
    edges, weights = select_training_edges(
        split.train_pos, split.train_weight, split.train_year, config.min_train_year,
    )
    if config.valid_as_input:
        edges, weights = append_pairs(edges, weights, split.valid_pos, split.valid_weight)
    return edges, weights


def default_input_graph(config: PLNLPConfig) -> bool:
    """Whether ``config`` passes messages over the training edges alone (no
    ``valid_as_input``, no ``min_train_year``): the graph whose adjacency the
    pipeline's ``load`` stage writes once, prebuilt."""
    return not config.valid_as_input and config.min_train_year is None


def build_input_adjacency(
    split: LinkSplit, config: PLNLPConfig, prebuilt: tuple[Tensor, Tensor] | None = None,
) -> tuple[Tensor, Tensor]:
    """The message-passing adjacency over the observed edges, and degrees.

    ``prebuilt`` is the adjacency and degrees of the training edges alone,
    as :func:`~plnlp_core.graph.build_adjacency` gives them: the ``load``
    stage writes them once and each worker memory-maps the files, so the
    workers of one node share one copy of the graph instead of building one
    each. It is taken when ``config``'s input graph is that one
    (:func:`default_input_graph`); with validation edges added or old ones
    left out, the adjacency is built here from :func:`input_edges`."""
    if prebuilt is not None and default_input_graph(config):
        return prebuilt
    edges, _ = input_edges(split, config)
    return build_adjacency(edges, split.num_nodes)


def build_training_graph(
    split: LinkSplit, config: PLNLPConfig, walks: WalkRounds | None = None,
    rank: int = 0, world_size: int = 1, adjacency: tuple[Tensor, Tensor] | None = None,
) -> TrainingGraph:
    """Message-passing adjacency over the observed edges (``adjacency``
    when prebuilt, see :func:`build_input_adjacency`), worker ``rank``'s
    share (rows ``rank::world_size``) of the positives of
    :func:`training_positives`, and the random-walk rounds ``walks``."""
    adj, degree = build_input_adjacency(split, config, adjacency)
    positives, weights = training_positives(split, config)
    shard = slice(rank, None, world_size)
    return TrainingGraph(adj, degree, positives[shard],
                         None if weights is None else weights[shard], walks)


def training_positives(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor | None]:
    """The observed edges ranked every epoch, with their margins when the
    loss reads any: the edge weights (``edge_margin: raw``) or
    :func:`normalized_margins` (the paper). None at all with
    ``walk_positives: walks``, where the walk pairs alone are ranked (the
    authors' code)."""
    if config.walk_positives == "walks":
        return torch.empty(0, 2, dtype=torch.long), None
    edges, weights = input_edges(split, config)
    if not reads_weights(config):
        return edges, None
    if config.edge_margin == "normalized":
        return edges, normalized_margins(edges, weights, split.num_nodes)
    return edges, weights


def build_loss(config: PLNLPConfig) -> LossFn:
    """The loss ``config.loss`` names: a built-in one of :data:`LOSSES`, or
    the :class:`~plnlp_core.losses.RankingLoss` of one's own built with
    ``loss_options``."""
    if is_import_path(config.loss):
        return LOSS.build(LOSS.resolve(config.loss), {}, config.loss_options)
    return LOSSES.get(config.loss)


def reads_weights(config: PLNLPConfig) -> bool:
    """Whether the loss reads a per-positive weight (a margin): a weighted
    built-in one, or one of one's own that says so (``weighted``)."""
    if is_import_path(config.loss):
        return LOSS.resolve(config.loss).weighted
    return config.loss in WEIGHTED_LOSSES


def walk_graph(split: LinkSplit, config: PLNLPConfig) -> tuple[Tensor, Tensor]:
    """What the random walks run on: the adjacency of the observed edges
    and the start nodes ``config.walk_starts`` names."""
    edges, _ = input_edges(split, config)
    adj, _ = build_adjacency(edges, split.num_nodes)
    return adj, walk_starts(config.walk_starts, split.num_nodes, edges)


def build_walk_rounds(split: LinkSplit, config: PLNLPConfig) -> list[tuple[Tensor, Tensor]]:
    """``config.walk_rounds`` independent sets of random-walk pairs over the
    observed graph, in memory, seeded by ``config.seed``: the very pairs
    and weights the ``augment`` stage writes as Parquet
    (:func:`~plnlp_core.random_walk.walk_round`, chunk by chunk)."""
    adj, starts = walk_graph(split, config)
    return [walk_round(adj, starts, config.walk_length, config.seed, r)
            for r in range(config.walk_rounds)]


def build_sampler(
    config: PLNLPConfig, split: LinkSplit, graph: TrainingGraph, device: torch.device | None = None,
) -> NegativeSampler:
    """The negative sampler ``config`` names, avoiding every observed edge,
    drawing on ``device`` (where the positives live). On an undirected
    graph the observed edges are ``graph.adj``'s entries, which it queries
    in place (:meth:`EdgeSet.from_csr`)."""
    if split.info.directed:
        observed, _ = input_edges(split, config)
        edge_set = EdgeSet(observed, split.num_nodes, undirected=False)
    else:
        edge_set = EdgeSet.from_csr(graph.adj, undirected=True)
    edge_set.to(device or "cpu")
    return build_negative_sampler(config, edge_set, graph.degree)


def build_negative_sampler(
    config: PLNLPConfig, edge_set: EdgeSet, degree: Tensor,
) -> NegativeSampler:
    """The sampler ``config.sampler`` names over the observed ``edge_set``
    (node ``degree`` in the training graph), with the settings it takes;
    one of one's own with ``degree`` and ``pool_size`` (``candidate_pool``)
    where its constructor names them, and ``sampler_options``."""
    guided = {"degree": degree, "pool_size": config.candidate_pool}
    if is_import_path(config.sampler):
        return SAMPLER.build(SAMPLER.resolve(config.sampler), {"edge_set": edge_set, **guided},
                             config.sampler_options)
    sampler_arguments = {
        "global": {},
        "local": {"degree": degree, "degree_power": config.degree_power},
        "hard": guided,
        "adversarial": {**guided, "dim": config.generator_dim, "lr": config.generator_lr},
    }
    return SAMPLERS.get(config.sampler)(edge_set, **sampler_arguments[config.sampler])
