r"""Synthetic stand-ins of the OGB link datasets, written in OGB's exact
on-disk layout at any size up to the published one, so that the whole
pipeline runs on a graph of a real dataset's shape without downloading it::

    root = cached_standin("ppa", "real")      # a data root holding ogbl_ppa/
    split = load_ogb(DATASETS.get("ppa"), root)

The graphs are Chung–Lu graphs: both endpoints of an edge are drawn in
proportion to power-law node weights (exponent :obj:`DEGREE_EXPONENT`),
capped so that no pair is expected more than once, and duplicates and
self-loops are dropped. Degrees are therefore heavy-tailed, as on the real
graphs. Validation and test positives are disjoint from the training edges,
and every negative is a non-edge of the whole graph.

The sizes and their checks are in :mod:`~plnlp_core.data.standins.sizing`, the
random graphs in :mod:`~plnlp_core.data.standins.generating`, OGB's files in
:mod:`~plnlp_core.data.standins.ogb_writer` and the cache in
:mod:`~plnlp_core.data.standins.cache`.
"""
from plnlp_core.data.standins.cache import FORMAT_VERSION, cached_standin
from plnlp_core.data.standins.generating import DEGREE_EXPONENT
from plnlp_core.data.standins.ogb_writer import write_standin
from plnlp_core.data.standins.sizing import (
    SIZES,
    SPLIT_TYPES,
    StandinSize,
    available_memory_bytes,
    check_standin_size,
    estimate_standin_bytes,
    standin_size,
)

__all__ = [
    "DEGREE_EXPONENT",
    "FORMAT_VERSION",
    "SIZES",
    "SPLIT_TYPES",
    "StandinSize",
    "available_memory_bytes",
    "cached_standin",
    "check_standin_size",
    "estimate_standin_bytes",
    "standin_size",
    "write_standin",
]
