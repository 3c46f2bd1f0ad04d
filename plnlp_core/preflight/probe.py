r"""The check of the parts of one's own a config names, before any work:
each is imported and must be a class of its kind (:mod:`plnlp_core.parts.kinds`),
take its own settings, be built as the run would build it, and give its
call's output shape on a tiny graph of :data:`TINY_NODES` nodes (a ring
with chords), with the config's own sizes, in training mode, gradients
included. Each problem is one sentence naming the part; the random state
is left as it was."""
from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn

from plnlp_core.assembly import build_loss, build_model, build_negative_sampler, own_predictor
from plnlp_core.config import PLNLPConfig
from plnlp_core.config_checks import check_margins, check_symmetry
from plnlp_core.data.datasets import DatasetInfo
from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError, first_line
from plnlp_core.graph import build_adjacency
from plnlp_core.nn.node_input import NodeInput
from plnlp_core.parts.import_path import GUIDE, is_import_path
from plnlp_core.parts.kinds import ENCODER, LOSS, SAMPLER, PartKind, described, kind_of
from plnlp_core.sampling import draw_negatives

TINY_NODES = 64
"""Nodes of the graph a part is tried on (more when ``candidate_pool`` asks)."""
TINY_PAIRS = 8
"""Positive pairs, and as many negatives, each part is tried on."""


class TinyGraph(NamedTuple):
    """What a part is tried on: node input ``x`` (``None`` for embeddings
    alone), the adjacency and degrees, the observed edges and pairs."""

    x: Tensor | None
    adj: Tensor
    degree: Tensor
    edge_set: EdgeSet
    pos: Tensor
    neg: Tensor

    @property
    def num_nodes(self) -> int:
        return self.adj.size(0)


def check_parts(config: PLNLPConfig, info: DatasetInfo) -> None:
    """Refuses, in one sentence naming it, each part of one's own ``config``
    names that does not import, is no class of its kind, rejects its
    settings, or fails or gives the wrong shape on a tiny graph."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        graph = tiny_graph(config, info)
        for kind in (ENCODER, kind_of("predictor", config.encoder_level), LOSS, SAMPLER):
            path = getattr(config, kind.name)
            if is_import_path(path):
                kind.check_options(path, kind.resolve(path), getattr(config, kind.options))
        if is_import_path(config.predictor):
            check_symmetry(config, info, kind_of("predictor", config.encoder_level).resolve(
                config.predictor).symmetric)
        if is_import_path(config.loss):
            check_margins(config, info, LOSS.resolve(config.loss).weighted)
        if is_import_path(config.encoder):
            _try_encoder_layer(config, info, graph)
        if is_import_path(config.predictor) and config.encoder_level == "node":
            _try_predictor(config, info, graph)
        if is_import_path(config.encoder) or is_import_path(config.predictor):
            _try_model(config, info, graph)
        if is_import_path(config.loss):
            _try_loss(config)
        if is_import_path(config.sampler):
            _try_sampler(config, graph)


def tiny_graph(config: PLNLPConfig, info: DatasetInfo) -> TinyGraph:
    """A ring of :data:`TINY_NODES` nodes with a chord from each node five
    ahead, node features as ``info`` has them, and a few pairs."""
    n = max(TINY_NODES, config.candidate_pool + 1)
    ring = torch.arange(n)
    edges = torch.cat([torch.stack([ring, (ring + 1) % n], 1),
                       torch.stack([ring, (ring + 5) % n], 1)])
    adj, degree = build_adjacency(edges, n)
    edge_set = EdgeSet(edges, n, undirected=False) if info.directed \
        else EdgeSet.from_csr(adj, undirected=True)
    neg = torch.stack([ring[:TINY_PAIRS], (ring[:TINY_PAIRS] + n // 2) % n], 1)
    return TinyGraph(node_features(config, info, n), adj, degree, edge_set, edges[:TINY_PAIRS],
                     neg)


def node_features(config: PLNLPConfig, info: DatasetInfo, n: int) -> Tensor | None:
    """Node features of ``info``'s width for ``n`` nodes (categories when
    ``feature_categories``), or ``None`` when the node input reads none."""
    if config.node_input == "embedding":
        return None
    categories = config.feature_categories
    if categories is None:
        return torch.randn(n, info.feature_dim)
    drawn = torch.randint(categories, (n,))
    return drawn.float().unsqueeze(1) if info.feature_dim == 1 \
        else nn.functional.one_hot(drawn, categories).float()


def node_input_width(config: PLNLPConfig, info: DatasetInfo) -> int:
    """The width of the node input ``config`` builds on ``info``'s features."""
    with torch.device("meta"):  # its width alone
        return NodeInput(config.node_input, 1, config.embedding_dim, info.feature_dim,
                         num_categories=config.feature_categories).out_channels


def _try_encoder_layer(config: PLNLPConfig, info: DatasetInfo, graph: TinyGraph) -> None:
    """The layer of one's own as the encoder's first layer builds and calls it."""
    part = ENCODER.resolve(config.encoder)
    in_channels = node_input_width(config, info)
    given = {"in_channels": in_channels, "out_channels": config.hidden_channels}
    layer = _built(ENCODER, config, lambda: ENCODER.build(part, given, config.encoder_options),
                   given)
    _called(ENCODER, config, graph,
            lambda: layer(torch.randn(graph.num_nodes, in_channels), graph.adj),
            [graph.num_nodes, config.hidden_channels], "nodes x out_channels")


def _try_predictor(config: PLNLPConfig, info: DatasetInfo, graph: TinyGraph) -> None:
    """The node level's predictor of one's own on pairs of random vectors."""
    width = node_input_width(config, info) if config.encoder == "none" else config.hidden_channels
    kind = kind_of("predictor", "node")
    given = {"in_channels": width, "hidden_channels": config.predictor_hidden,
             "num_layers": config.predictor_layers, "dropout": config.predictor_dropout}
    predictor = _built(kind, config, lambda: own_predictor(config, width), given)
    h_src, h_dst = torch.randn(2, TINY_PAIRS, width).unbind()
    _called(kind, config, graph, lambda: predictor(h_src, h_dst), [TINY_PAIRS],
            "one score a pair")


def _try_model(config: PLNLPConfig, info: DatasetInfo, graph: TinyGraph) -> None:
    """The whole model with the parts of one's own, scoring pairs in
    training, its gradients computed."""
    # the encoder's layer and a node-level predictor were tried alone: blame the encoder,
    # unless the predictor of one's own is the edge level's, first called here
    blamed = is_import_path(config.predictor) and (config.encoder_level == "edge"
                                                   or not is_import_path(config.encoder))
    kind = kind_of("predictor", config.encoder_level) if blamed else ENCODER
    model = _built(kind, config, lambda: build_model(config, info, graph.num_nodes), {})
    model.train()
    pairs = torch.cat([graph.pos, graph.neg])
    _called(kind, config, graph, lambda: _with_gradients(model(graph.x, graph.adj, pairs)),
            [pairs.size(0)], "one score a pair")


def _try_loss(config: PLNLPConfig) -> None:
    """The loss of one's own on scores of pairs, its gradient computed."""
    loss = _built(LOSS, config, lambda: build_loss(config), {})
    pos = torch.randn(TINY_PAIRS, requires_grad=True)
    neg = torch.randn(TINY_PAIRS, config.num_neg, requires_grad=True)
    weight = torch.rand(TINY_PAIRS) + 0.5 if loss.weighted else None
    _called(LOSS, config, None, lambda: _with_gradients(loss(pos, neg, weight)), [],
            "one sum over the pairs")


def _try_sampler(config: PLNLPConfig, graph: TinyGraph) -> None:
    """The sampler of one's own drawing negatives for a few positives (a
    model-guided one seeing random scores first)."""
    sampler = _built(SAMPLER, config,
                     lambda: build_negative_sampler(config, graph.edge_set, graph.degree),
                     {"pool_size": config.candidate_pool})
    if sampler.guided:
        sampler.observe(lambda pairs: torch.randn(pairs.size(0)))
    generator = torch.Generator().manual_seed(0)
    _called(SAMPLER, config, graph, lambda: sampler(graph.pos, generator), [TINY_PAIRS, 2],
            "one negative pair a positive")
    _called(SAMPLER, config, graph, lambda: draw_negatives(
        graph.pos, sampler, config.num_neg, config.negatives, generator).index,
        [TINY_PAIRS, config.num_neg], "each positive's negatives, as training draws them")


def _with_gradients(out: object) -> object:
    """``out``, after the gradients of its sum are computed (when it is a
    tensor that has any)."""
    if isinstance(out, Tensor) and out.requires_grad:
        out.float().sum().backward()
    return out


def _built(kind: PartKind, config: PLNLPConfig, build: Callable[[], object],
           given: dict[str, object]) -> object:
    """What ``build`` builds, or the refusal of the part of ``kind`` whose
    constructor failed on the arguments ``given`` and its own settings."""
    try:
        return build()
    except PLNLPError:
        raise
    except Exception as error:  # the user's constructor may fail in any way
        options = getattr(config, kind.options)
        shown = ", ".join(f"{key}={value!r}" for key, value in {**given, **options}.items())
        shown = f" with {shown}" if shown else ""
        raise PLNLPError(f"{kind.name} {getattr(config, kind.name)!r} could not be built"
                         f"{shown} ({type(error).__name__}: "
                         f"{first_line(error)}); fix {kind.options} or the class's __init__ "
                         f"({GUIDE}).") from error


def _called(kind: PartKind, config: PLNLPConfig, graph: TinyGraph | None,
            call: Callable[[], object], expected: list[int], meaning: str) -> Tensor:
    """What ``call`` returns, a tensor of shape ``expected``; or the refusal
    of the part of ``kind`` that failed in it or returned another shape."""
    path, where = getattr(config, kind.name), _graph_words(graph)
    try:
        out = call()
    except PLNLPError:
        raise
    except Exception as error:  # the user's forward may fail in any way
        raise PLNLPError(f"{kind.name} {path!r} failed on {where} ({type(error).__name__}: "
                         f"{first_line(error)}); its {kind.call} ({GUIDE}).") from error
    got = f"shape {list(out.shape)}" if isinstance(out, Tensor) \
        else f"{described(out)}, not a tensor"
    if not isinstance(out, Tensor) or list(out.shape) != expected:
        raise PLNLPError(f"{kind.name} {path!r} returned {got} on {where}, where {expected} "
                         f"({meaning}) was due; its {kind.call} ({GUIDE}).")
    return out


def _graph_words(graph: TinyGraph | None) -> str:
    return "scores of a few pairs" if graph is None \
        else f"a tiny graph of {graph.num_nodes} nodes"
