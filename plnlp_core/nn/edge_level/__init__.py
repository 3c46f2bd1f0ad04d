"""The edge level: a pair encoded from its joint neighbourhood (common
neighbours and paths, NCN), beside the node level of :mod:`plnlp_core.nn`."""
