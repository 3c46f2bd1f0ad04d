"""The training graph and node features (dense, or a sparse table's entries)
of a split as ``.npy`` files beside its Parquet tables, memory-mapped by
whoever reads them.

Every Train worker needs the whole message-passing graph. Built in each
worker from the training edges, two workers on one node held two copies of
it. The ``load`` stage now writes it once: the CSR adjacency of the training
edges and the node degrees, exactly what
:func:`plnlp_core.graph.build_adjacency` gives (:func:`write_graph_files`).
A worker maps the files (:func:`read_adjacency`, :func:`read_features`), so
their pages are the node's page cache, held once however many workers read
them (``benchmarks/bench_graph_sharing.py`` measures it).

The maps are copy-on-write (:func:`numpy.load`'s ``mmap_mode="c"``, by
the :func:`numpy.lib.format.open_memmap` it calls, which never unpickles):
pages stay shared until a process writes one, and that process then gets a
private copy of that page alone. A read-only map (``"r"``) would crash a
process that writes to the tensor: torch has no read-only tensors, and
warns on wrapping a read-only array.
"""
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from plnlp_core.data.datasets import LinkSplit
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency

CROW_FILE = "adj_crow.npy"
COL_FILE = "adj_col.npy"
VALUES_FILE = "adj_values.npy"
DEGREE_FILE = "degree.npy"
FEATURES_FILE = "node_features.npy"
FEATURE_INDICES_FILE = "node_feature_indices.npy"  # sparse features: [2, entries] (node, feature)
FEATURE_VALUES_FILE = "node_feature_values.npy"


def write_graph_files(split: LinkSplit, directory: Path) -> None:
    """Writes the CSR adjacency of ``split``'s training edges, the node
    degrees and the node features (if any) under ``directory``."""
    adj, degree = build_adjacency(split.train_pos, split.num_nodes)
    arrays = {CROW_FILE: adj.crow_indices(), COL_FILE: adj.col_indices(),
              VALUES_FILE: adj.values(), DEGREE_FILE: degree}
    if split.x is not None and split.x.is_sparse:
        x = split.x.coalesce()
        arrays[FEATURE_INDICES_FILE], arrays[FEATURE_VALUES_FILE] = x.indices(), x.values()
    elif split.x is not None:
        arrays[FEATURES_FILE] = split.x
    for name, tensor in arrays.items():
        np.save(directory / name, tensor.numpy(), allow_pickle=False)


def read_adjacency(directory: Path, num_nodes: int) -> tuple[Tensor, Tensor]:
    """The sparse CSR adjacency and the degrees :func:`write_graph_files`
    wrote under ``directory``, memory-mapped. Its invariants are not checked
    again (that reads every page): ``load`` built it, and the stage cache
    checks the files' sha256."""
    crow = mapped_tensor(directory / CROW_FILE, (num_nodes + 1,), torch.long)
    nnz = int(crow[-1])
    col = mapped_tensor(directory / COL_FILE, (nnz,), torch.long)
    values = mapped_tensor(directory / VALUES_FILE, (nnz,), torch.float)
    degree = mapped_tensor(directory / DEGREE_FILE, (num_nodes,), torch.float)
    adj = torch.sparse_csr_tensor(crow, col, values, (num_nodes, num_nodes), check_invariants=False)
    return adj, degree


def read_features(directory: Path, num_nodes: int, feature_dim: int) -> Tensor:
    """The node features :func:`write_graph_files` wrote under ``directory``,
    memory-mapped, dense or sparse as they were written: a model that never
    reads them never loads a page."""
    if not (directory / FEATURE_VALUES_FILE).exists():
        return mapped_tensor(directory / FEATURES_FILE, (num_nodes, feature_dim))
    values = mapped_tensor(directory / FEATURE_VALUES_FILE, None, torch.float)
    indices = mapped_tensor(directory / FEATURE_INDICES_FILE, (2, values.numel()), torch.long)
    return torch.sparse_coo_tensor(indices, values, (num_nodes, feature_dim), is_coalesced=True,
                                   check_invariants=False)  # the stage cache checks its sha256


def mapped_tensor(path: Path, shape: tuple[int, ...] | None,
                  dtype: torch.dtype | None = None) -> Tensor:
    """The ``.npy`` array at ``path``, copy-on-write mapped, as a tensor
    sharing its memory; refused unless it has ``shape`` (one dimension, any
    length, for ``None``) and ``dtype``."""
    try:
        tensor = torch.from_numpy(np.lib.format.open_memmap(path, mode="c"))
    except FileNotFoundError:
        raise _damaged(path, "no such file") from None
    except (OSError, ValueError, TypeError) as error:
        raise _damaged(path, f"not a .npy array: {error}") from None
    shape = shape if shape is not None else tuple(tensor.shape[:1])
    if tensor.shape != shape or (dtype is not None and tensor.dtype != dtype):
        expected = str(tensor.dtype if dtype is None else dtype).removeprefix("torch.")
        raise _damaged(path, f"{str(tensor.dtype).removeprefix('torch.')} of shape "
                             f"{list(tensor.shape)}, not {expected} of shape {list(shape)}")
    return tensor


def _damaged(path: Path, problem: str) -> PLNLPError:
    return PLNLPError(f"{path} is missing or damaged ({problem}); "
                      f"delete {path.parent} to rebuild it.")
