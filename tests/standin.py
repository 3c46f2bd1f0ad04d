"""Small stand-ins for OGB datasets in OGB's exact on-disk layout, with the
counts the tests were written against; :mod:`plnlp_core.data.standins` makes them."""
from pathlib import Path

from plnlp_core.data.standins import StandinSize, write_standin


def write_ddi_standin(root: Path, num_nodes: int = 60, num_edges: int = 400, seed: int = 0) -> Path:
    """A random ``ogbl_ddi`` under ``root``: ``num_edges`` positives, a tenth
    each for validation and test, as many negatives each. Returns ``root``."""
    held = num_edges // 10
    size = StandinSize(num_nodes, num_edges - 2 * held, held, held, held, held)
    return write_standin("ddi", root, size, seed)


def write_collab_standin(root: Path, num_nodes: int = 50, num_edges: int = 300,
                         seed: int = 0) -> Path:
    """A random ``ogbl_collab`` under ``root``: 128 node features, edge
    weights and years, ``num_edges`` positives split 80/10/10, as many
    negatives each as validation positives. Returns ``root``."""
    train, valid = num_edges * 8 // 10, num_edges * 9 // 10 - num_edges * 8 // 10
    size = StandinSize(num_nodes, train, valid, num_edges - train - valid, valid, valid, 128)
    return write_standin("collab", root, size, seed)


def write_citation2_standin(root: Path, num_nodes: int = 50, num_edges: int = 300,
                            num_neg: int = 1000, seed: int = 0) -> Path:
    """A random ``ogbl_citation2`` under ``root``: directed edges, 128 node
    features and years, ``num_edges`` positives split 80/10/10 and
    ``num_neg`` negative targets per source. Returns ``root``."""
    train, valid = num_edges * 8 // 10, num_edges * 9 // 10 - num_edges * 8 // 10
    size = StandinSize(num_nodes, train, valid, num_edges - train - valid, num_neg, num_neg, 128)
    return write_standin("citation2", root, size, seed)
