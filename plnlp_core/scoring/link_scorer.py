r"""A trained link predictor put to use: scores of given pairs, and each
node's highest-scored non-edges, from node vectors encoded once.

Training's model encodes the graph at every step; once trained, the node
vectors :math:`\mathbf{h} = \mathrm{ENC}(A)` over the input graph :math:`A`
are fixed, so that scoring runs the predictor alone,

.. math::
    s_{ij} = f(\mathbf{h}_i, \mathbf{h}_j), \qquad
    \mathrm{top}_K(i) = \operatorname*{arg\,top\text{-}K}_{j \notin
    N_{\mathrm{known}}(i) \cup \{i\}} s_{ij},

where :math:`N_{\mathrm{known}}(i)` holds every edge the dataset names
(training, validation and test), so that recommendations are links the
graph does not have. The edge level keeps :math:`A` too: its pair terms
read it.
"""
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch import Tensor

from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo, LinkSplit
from plnlp_core.data.node_ids import NodeIds
from plnlp_core.errors import PLNLPError, first_line
from plnlp_core.graph import csr_of_pairs
from plnlp_core.nn import PLNLPModel
from plnlp_core.parts.import_path import import_object, own_parts
from plnlp_core.scoring.evaluation import score_pairs

TENSORS_FILE = "scorer.pt"
META_FILE = "scorer.json"
IDS_FILE = "node_ids.parquet"
FORMAT = 1
MAX_PAIRS_PER_CHUNK = 2**24
"""Pairs scored at once when recommending (16 M scores: 64 MB)."""


class Recommendations(NamedTuple):
    """Rows of recommended links: each ``source``'s ``candidate`` with its
    ``score`` and ``rank`` (1 for the best)."""

    source: Tensor
    candidate: Tensor
    score: Tensor
    rank: Tensor


class LinkScorer:
    """Scores pairs of one trained model.

    Args:
        model (PLNLPModel): The trained model; only its predictor is run.
        h (Tensor): Node vectors over ``adj``, shape ``[N, C]``.
        adj (Tensor): Sparse CSR input graph ``h`` was encoded on.
        known (Tensor or callable): Sparse CSR graph of every known edge
            (both ways when undirected), left out of recommendations; kept
            on the CPU. Or a function that builds it, called at the first
            recommendation: a served model that only scores pairs never
            holds it.
        node_ids (NodeIds): The user's ids of the nodes.
        config (PLNLPConfig): The model's settings.
        info (DatasetInfo): The model's dataset.
    """

    def __init__(self, model: PLNLPModel, h: Tensor, adj: Tensor,
                 known: Tensor | Callable[[], Tensor], node_ids: NodeIds, config: PLNLPConfig,
                 info: DatasetInfo) -> None:
        self.model = model.eval()
        self.h, self.adj, self._known = h, adj, known
        self.node_ids, self.config, self.info = node_ids, config, info

    @property
    def known(self) -> Tensor:
        """Every known edge as a sparse CSR graph, built at the first use."""
        if not isinstance(self._known, Tensor):
            self._known = self._known()
        return self._known

    @classmethod
    @torch.no_grad()
    def encode(cls, model: PLNLPModel, split: LinkSplit, adj: Tensor, config: PLNLPConfig,
               node_ids: NodeIds) -> "LinkScorer":
        """Encodes ``split``'s nodes once over ``adj`` (on ``adj``'s device)."""
        model.eval()
        x = None if split.x is None else split.x.to(adj.device)
        return cls(model, model.encode(x, adj), adj, known_edges(split),
                   node_ids, config, split.info)

    @property
    def num_nodes(self) -> int:
        return self.h.size(0)

    def pairs_of(self, src: object, dst: object) -> Tensor:
        """The positions of the id pairs ``(src_t, dst_t)``, shape ``[M, 2]``;
        a refused id is named by its row and column, ``src`` or ``dst``."""
        return torch.stack([self.node_ids.positions(src, "source node id", "src"),
                            self.node_ids.positions(dst, "destination node id", "dst")], dim=1)

    @torch.no_grad()
    def score(self, pairs: Tensor) -> Tensor:
        """Scores of ``pairs`` (positions, shape ``[M, 2]``), on the CPU,
        computed as evaluation computes them (at the edge level up to float
        rounding: evaluation sums the lists it keeps of its pairs' common
        neighbours, a request's pairs are not kept)."""
        return score_pairs(self.model, self.h, pairs.to(self.h.device),
                           self.config.eval_batch_size, self.adj)

    def recommend(self, nodes: Tensor, k: int, progress: Callable[[int], None] | None = None,
                  ) -> Iterator[Recommendations]:
        """For each node position in ``nodes``, its ``k`` highest-scored
        non-edges (no self-loops), best first, chunk by chunk (fewer than
        ``k`` for a node with fewer non-edges). ``progress`` hears how many nodes each chunk
        finished; memory stays within about :data:`MAX_PAIRS_PER_CHUNK` scores."""
        if not 1 <= k < self.num_nodes:
            raise PLNLPError(f"--top-k must be between 1 and {self.num_nodes - 1} (the model's "
                             f"graph has {self.num_nodes} nodes); got {k}.")
        for chunk in nodes.split(max(1, MAX_PAIRS_PER_CHUNK // self.num_nodes)):
            yield self._top_k(chunk, k)
            if progress is not None:
                progress(chunk.numel())

    @torch.no_grad()
    def _top_k(self, sources: Tensor, k: int) -> Recommendations:
        scores = self._score_all(sources)
        scores[self._known_mask(sources)] = float("-inf")
        best, candidates = scores.topk(k, dim=1)
        found = best > float("-inf")
        rank = torch.arange(1, k + 1).expand(sources.numel(), -1)
        return Recommendations(sources.unsqueeze(1).expand(-1, k)[found], candidates[found],
                               best[found], rank[found])

    def _score_all(self, sources: Tensor) -> Tensor:
        """Scores ``[B, N]`` of each source with every node, on the CPU: one
        matrix product for predictors that have one (``score_all``: dot,
        bilinear), else as pairs."""
        predictor = self.model.predictor
        if self.config.encoder_level == "node" and hasattr(predictor, "score_all"):
            h_src = self.h.index_select(0, sources.to(self.h.device))
            return predictor.score_all(h_src, self.h).float().cpu()
        pairs = torch.stack([sources.repeat_interleave(self.num_nodes),
                             torch.arange(self.num_nodes).repeat(sources.numel())], dim=1)
        return self.score(pairs).view(sources.numel(), self.num_nodes).float()

    def _known_mask(self, sources: Tensor) -> Tensor:
        """Bool ``[B, N]``: which candidates are known edges of, or are, each source."""
        crow, col = self.known.crow_indices(), self.known.col_indices()
        starts, counts = crow[sources], crow[sources + 1] - crow[sources]
        rows = torch.repeat_interleave(torch.arange(sources.numel()), counts)
        first_entry = (counts.cumsum(0) - counts)[rows]  # each row's first place in ``rows``
        entries = starts[rows] + torch.arange(rows.numel()) - first_entry
        mask = torch.zeros(sources.numel(), self.num_nodes, dtype=torch.bool)
        mask[rows, col[entries]] = True
        mask[torch.arange(sources.numel()), sources] = True
        return mask

    def save(self, directory: Path) -> None:
        """Writes the scorer into ``directory`` as tensors, JSON and Parquet
        (no pickled objects: :meth:`load` reads it with ``weights_only``)."""
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {"h": self.h.cpu(), "predictor": self.model.predictor.state_dict(),
                   **_csr_parts("known", self.known)}
        if self.config.encoder_level == "edge":
            tensors.update(_csr_parts("adj", self.adj))
        torch.save(tensors, directory / TENSORS_FILE)
        meta = {"format": FORMAT, "config": self.config.to_dict(),
                "info": {**vars(self.info), "hits_k": list(self.info.hits_k)}}
        (directory / META_FILE).write_text(json.dumps(meta, indent=2))
        if self.node_ids.ids is not None:
            pq.write_table(pa.table({"id": self.node_ids.ids}), directory / IDS_FILE)

    @staticmethod
    def saved_config(directory: Path) -> PLNLPConfig:
        """The settings of the model :meth:`save` wrote into ``directory``."""
        return PLNLPConfig.from_mapping(json.loads((directory / META_FILE).read_text())["config"])

    @classmethod
    def load(cls, directory: Path, device: torch.device | str = "cpu") -> "LinkScorer":
        """The scorer :meth:`save` wrote into ``directory``, on ``device``.
        The file is memory-mapped: the known edges (as large as the graph)
        are read only when :meth:`recommend` first needs them, and on the
        CPU the node vectors stay pages of the file, shared by every process
        that serves the same model."""
        meta = json.loads((directory / META_FILE).read_text())
        if meta.get("format") != FORMAT:
            raise PLNLPError(f"{directory} holds a scorer of format {meta.get('format')}, "
                             f"this plnlp reads format {FORMAT}; log the model again with it.")
        config = PLNLPConfig.from_mapping(meta["config"])
        check_parts_importable(config)
        info = DatasetInfo(**{**meta["info"], "hits_k": tuple(meta["info"]["hits_k"])})
        tensors = torch.load(directory / TENSORS_FILE, weights_only=True, map_location="cpu",
                             mmap=True)
        h = tensors["h"].to(device)
        model = _predictor_only(config, info, h.size(0), tensors["predictor"], h.device)
        ids = pq.read_table(directory / IDS_FILE).column("id").combine_chunks() \
            if (directory / IDS_FILE).exists() else None
        adj = _csr(tensors, "adj", h.size(0)).to(device) if "adj_crow" in tensors else None
        return cls(model, h, adj, lambda: _csr(tensors, "known", h.size(0)),
                   NodeIds(h.size(0), ids), config, info)


def check_parts_importable(config: PLNLPConfig) -> None:
    """Refuses a model whose parts of one's own do not import here (the
    model's code carries them; what they import must be installed)."""
    for kind, path in own_parts(config).items():
        try:
            import_object(kind, path)
        except PLNLPError as error:
            cause = error.__cause__
            detail = str(error) if cause is None else f"{type(cause).__name__}: {first_line(cause)}"
            raise PLNLPError(f"this model's {kind} {path!r} cannot be imported here ({detail}); "
                             "install what it imports on this machine (the model carries the "
                             "code of its parts, not their dependencies), or log the model "
                             "again with its parts' code (docs/extending.md).") from error


def known_edges(split: LinkSplit) -> Tensor:
    """Every edge ``split`` names (training, validation and test
    positives) as a sparse CSR graph, both ways unless it is directed."""
    return csr_of_pairs(torch.cat([split.train_pos, split.valid_pos, split.test_pos]),
                        split.num_nodes, both_ways=not split.info.directed)


def _predictor_only(config: PLNLPConfig, info: DatasetInfo, num_nodes: int,
                    state: dict[str, Tensor], device: torch.device) -> PLNLPModel:
    """``config``'s model with the trained predictor ``state``; its node
    input and encoder stay on the meta device (no memory): scoring never
    runs them."""
    with torch.device("meta"):
        model = build_model(config, info, num_nodes)
    model.predictor.to_empty(device=device)
    model.predictor.load_state_dict(state)
    return model.eval()


def _csr_parts(name: str, adj: Tensor) -> dict[str, Tensor]:
    return {f"{name}_crow": adj.crow_indices().cpu(),
            f"{name}_col": adj.col_indices().cpu().int()}


def _csr(tensors: dict[str, Tensor], name: str, num_nodes: int) -> Tensor:
    col = tensors[f"{name}_col"].long()
    return torch.sparse_csr_tensor(tensors[f"{name}_crow"], col,
                                   torch.ones(col.numel(), device=col.device),
                                   (num_nodes, num_nodes), check_invariants=True)
