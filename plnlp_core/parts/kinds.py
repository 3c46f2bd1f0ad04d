r"""The four kinds of parts a config may name by import path, and what each
must be: the class it subclasses, what its constructor receives, what its
call takes and returns (docs/extending.md; the built-in parts are the
examples). A part's own settings (``encoder_options``, ...) are keyword
arguments of its constructor beside what the product passes; the product
passes a keyword argument only where the constructor's signature names it.

- **encoder** (:data:`ENCODER`): a message-passing *layer*, a subclass of
  :class:`torch.nn.Module` (PyG's :class:`~torch_geometric.nn.conv.MessagePassing`
  is one), built as ``layer(in_channels, out_channels, **encoder_options)``
  once per layer of :class:`~plnlp_core.nn.encoders.encoder.GNNEncoder`'s
  stack, which adds the ReLU, dropout, residuals and norms the config asks
  for: ``forward(x [N, in_channels], adj [N, N]) -> [N, out_channels]``,
  ``adj`` the symmetric sparse CSR adjacency of the training graph (values
  1), which PyG's layers take as their ``edge_index``; a
  ``reset_parameters()``, if it has one (PyG's layers do), is called once
  the stack is built.
- **predictor** at ``encoder_level: node`` (:data:`PREDICTOR`): a
  :class:`torch.nn.Module` built as ``predictor(in_channels, hidden_channels=,
  num_layers=, dropout=, **predictor_options)`` (``predictor_hidden``,
  ``predictor_layers``, ``predictor_dropout``), with a class flag
  ``symmetric`` (:math:`s(i, j) = s(j, i)`; refused on directed graphs):
  ``forward(h_src [M, C], h_dst [M, C]) -> [M]``, and optionally
  ``score_all(h_src [B, C], h [N, C]) -> [B, N]`` for fast recommendations.
- **predictor** at ``encoder_level: edge`` (:data:`EDGE_PREDICTOR`): built the
  same way, called with every node's vector, the pairs and the graph's
  :class:`~plnlp_core.nn.edge_level.common_neighbors.AdjacencyLookup`:
  ``forward(h [N, C], pairs [M, 2], lookup) -> [M]``.
- **loss** (:data:`LOSS`): a :class:`~plnlp_core.losses.base.RankingLoss`
  built as ``loss(**loss_options)``: ``forward(pos [m], neg [m, K], weight
  [m] or None) -> []``, a sum over pairs.
- **sampler** (:data:`SAMPLER`): a :class:`~plnlp_core.sampling.base.NegativeSampler`
  built as ``sampler(edge_set, degree=, pool_size=, **sampler_options)``
  (the training graph's degrees ``[N]``, ``candidate_pool``):
  ``__call__(pos [m, 2]) -> [m, 2]`` pairs that are no observed edge; a
  model-guided one (``guided = True``) sees the model's scores first
  (``observe``).
"""
import inspect
from collections.abc import Mapping
from dataclasses import dataclass

from torch import nn

from plnlp_core.errors import PLNLPError
from plnlp_core.losses.base import RankingLoss
from plnlp_core.parts.import_path import GUIDE, import_object, with_article
from plnlp_core.sampling.base import NegativeSampler


@dataclass(frozen=True)
class PartKind:
    """What a part of one kind is.

    Attributes:
        name (str): The setting that names it (``"encoder"``).
        base (type): The class it subclasses.
        positional (tuple): What the product passes its constructor first,
            in order.
        keywords (tuple): What the product passes by name, where the
            constructor's signature names it.
        flags (tuple): Class attributes it must set to a bool.
        call (str): What its call takes and returns, shapes included.
    """

    name: str
    base: type
    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    flags: tuple[str, ...]
    call: str

    @property
    def options(self) -> str:
        """The setting holding a part's own settings (``encoder_options``)."""
        return f"{self.name}_options"

    def resolve(self, path: str) -> type:
        """The class ``path`` names, refused unless it is a subclass of
        :attr:`base` with every flag of :attr:`flags`."""
        part = import_object(self.name, path)
        if not (isinstance(part, type) and issubclass(part, self.base)):
            raise PLNLPError(f"{self.name} {path!r} is {described(part)}, not a subclass of "
                             f"{qualified_name(self.base)}; {with_article(self.name)} is a "
                             f"class whose {self.call} ({GUIDE}).")
        for flag in self.flags:
            if not isinstance(getattr(part, flag, None), bool):
                raise PLNLPError(f"{self.name} {path!r} has no {flag} flag; give the class "
                                 f"{flag} = True or False ({GUIDE}).")
        return part

    def accepted_options(self, part: type) -> list[str] | None:
        """The settings of its own ``part``'s constructor takes (the
        parameters the product does not pass), or ``None`` when it takes any
        (``**kwargs``)."""
        parameters = inspect.signature(part).parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            return None
        given = {*self.positional, *self.keywords}
        return [p.name for p in parameters if p.name not in given
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def check_options(self, path: str, part: type, options: Mapping[str, object]) -> None:
        """Refuses a setting of ``options`` that ``part``'s constructor does
        not take, or one the product passes itself."""
        accepted = self.accepted_options(part)
        for key in options:
            if key in (*self.positional, *self.keywords) or (accepted is not None
                                                             and key not in accepted):
                takes = "any but those" if accepted is None else ", ".join(accepted) or "none"
                passed = ", ".join((*self.positional, *self.keywords)) or "nothing"
                raise PLNLPError(f"{self.options}.{key} is not a setting of {self.name} {path!r}; "
                                 f"it takes: {takes} (the product passes {passed}).")

    def build(self, part: type, given: Mapping[str, object],
              options: Mapping[str, object]) -> object:
        """``part`` built with ``given``'s :attr:`positional` arguments, those
        of its :attr:`keywords` the constructor names, and ``options``."""
        parameters = inspect.signature(part).parameters
        named = {key: given[key] for key in self.keywords if key in parameters}
        return part(*(given[key] for key in self.positional), **named, **options)


def described(part: object) -> str:
    """What ``part`` is, in a few words: ``a function``, ``the class Foo``."""
    if isinstance(part, type):
        return f"the class {qualified_name(part)}"
    if inspect.isfunction(part) or inspect.isbuiltin(part):
        return "a function"
    if inspect.ismodule(part):
        return "a module"
    return f"a {type(part).__name__} object"


def qualified_name(cls: type) -> str:
    """``torch.nn.Module`` for :class:`torch.nn.Module`: the name by its public module."""
    public = {"torch.nn.modules.module": "torch.nn", "plnlp_core.losses.base": "plnlp_core.losses",
              "plnlp_core.sampling.base": "plnlp_core.sampling"}
    module = public.get(cls.__module__, cls.__module__)
    return f"{module}.{cls.__qualname__}"


ENCODER = PartKind("encoder", nn.Module, ("in_channels", "out_channels"), (), (),
                   "forward(x [N, in_channels], adj [N, N] sparse) returns [N, out_channels]")
PREDICTOR = PartKind("predictor", nn.Module, ("in_channels",),
                     ("hidden_channels", "num_layers", "dropout"), ("symmetric",),
                     "forward(h_src [M, C], h_dst [M, C]) returns [M]")
EDGE_PREDICTOR = PartKind("predictor", nn.Module, ("in_channels",),
                          ("hidden_channels", "num_layers", "dropout"), ("symmetric",),
                          "forward(h [N, C], pairs [M, 2], lookup) returns [M] at "
                          "encoder_level edge")
LOSS = PartKind("loss", RankingLoss, (), (), ("weighted",),
                "forward(pos [m], neg [m, K], weight [m] or None) returns their sum []")
SAMPLER = PartKind("sampler", NegativeSampler, ("edge_set",), ("degree", "pool_size"),
                   ("guided",), "call on positives [m, 2] and a generator returns negatives [m, 2]")
KINDS = (ENCODER, PREDICTOR, LOSS, SAMPLER)
"""The kinds at the node level (the edge level's predictor: :data:`EDGE_PREDICTOR`)."""


def kind_of(name: str, encoder_level: str = "node") -> PartKind:
    """The kind the setting ``name`` chooses at ``encoder_level``."""
    if name == "predictor" and encoder_level == "edge":
        return EDGE_PREDICTOR
    return next(kind for kind in KINDS if kind.name == name)
