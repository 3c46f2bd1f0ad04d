r"""A training run's peak GPU memory, estimated from its settings and its
graph's size before anything is put on a GPU: what a sweep needs to pack
trials onto one.

.. math::
    M = C + F + 16 P + 12 \cdot 2E + 4 N^2 [\mathrm{dense}]
        + b \, \bigl(3 L N H + \max(k \cdot B (1 + n) W, \; 3 B_e W)\bigr),

where :math:`C` is the process's CUDA context, :math:`F` the allocator's and
the kernels' floor, :math:`P` the parameters (fp32 weights, gradients and
Adam's two moments), :math:`E` the training edges (both directions, index and
value), :math:`4 N^2` the dense copy of the adjacency a GPU aggregates over
when :func:`~plnlp_core.nn.encoders.mean_aggregation.dense_pays_off`, :math:`b` the
bytes of an activation (2 under ``bf16``), :math:`L` and :math:`H` the
encoder's layers and width, :math:`B` the positives a step with :math:`n`
negatives each, :math:`W` the widest of the encoder's and the predictor's
widths, :math:`k` the buffers a scored pair keeps for the backward (:math:`3 +
2 L_p` at the node level, with :math:`L_p` the predictor's layers; 38 at the
edge level, whose common neighbours are gathered per pair) and :math:`B_e` the
pairs an evaluation chunk scores.

:data:`FLOOR_BYTES` and the two :math:`k` were fitted to the allocator peaks
the benchmark measured on an H200 in fp32 (ddi ``smoke``, ``cpu``, ``paper``
and ``cpu`` at the edge level: 601, 862, 3,961 and 3,022 MiB), which the
formula puts at 773, 1,003, 4,231 and 2,987 MiB: at most 29 % above, and
at most 2 % below. Other datasets and encoders are extrapolated, not measured.
"""
from collections.abc import Callable

import torch
from torch.overrides import TorchFunctionMode

from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DatasetInfo
from plnlp_core.errors import PLNLPError
from plnlp_core.nn.encoders.mean_aggregation import dense_pays_off

MIB = 2**20
GIB = 2**30
CONTEXT_BYTES = 512 * MIB
"""A CUDA context, held by every process that uses the GPU (each trial)."""
FLOOR_BYTES = 450 * MIB
EDGE_LEVEL_PAIR_BUFFERS = 38


def parameter_count(config: PLNLPConfig, info: DatasetInfo, num_nodes: int) -> int:
    """The model's parameters, counted on PyTorch's ``meta`` device (no
    memory is allocated) without their initial values (:class:`WithoutInitialValues`)."""
    from plnlp_core.assembly import build_model  # the model's modules, once needed

    with torch.device("meta"), WithoutInitialValues():
        model = build_model(config, info, num_nodes)
    return sum(p.numel() for p in model.parameters())


class WithoutInitialValues(TorchFunctionMode):
    """While active, ``torch.nn.init``'s functions (which every module's
    ``reset_parameters`` calls) return their tensor as it is. On ``meta``
    there are no values to fill, and the first fill of a ``meta`` tensor
    runs PyTorch's Python meta kernels, whose first call imports
    ``torch._dynamo``: about a CPU-second of a command's driver, which
    counts the parameters and never trains (:mod:`pipelines.runtime.deferred_dynamo`).
    A fill made otherwise (a PyG layer's own ``tensor.uniform_``) runs as usual."""

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> object:
        kwargs = kwargs or {}
        if getattr(func, "__module__", None) == "torch.nn.init":
            return kwargs["tensor"] if "tensor" in kwargs else args[0]
        return func(*args, **kwargs)


def peak_gpu_bytes(config: PLNLPConfig, info: DatasetInfo, num_nodes: int,
                   num_train_edges: int) -> int:
    """:math:`M` of the module's equation: the GPU memory one process training
    ``config`` on a graph of ``num_nodes`` nodes and ``num_train_edges``
    training edges holds at its peak, CUDA context included."""
    activation = 2 if config.precision in ("bf16", "auto") else 4
    width = max(config.hidden_channels, config.predictor_hidden)
    pairs = config.batch_for(num_train_edges) * (1 + config.num_neg)
    buffers = (3 + 2 * config.predictor_layers if config.encoder_level == "node"
               else EDGE_LEVEL_PAIR_BUFFERS)
    scored = max(buffers * pairs, 3 * config.eval_batch_size)
    dense = 4 * num_nodes**2 if dense_pays_off(num_nodes, 2 * num_train_edges,
                                               torch.device("cuda")) else 0
    encoder = 3 * config.encoder_layers * num_nodes * config.hidden_channels
    return int(CONTEXT_BYTES + FLOOR_BYTES + 16 * parameter_count(config, info, num_nodes)
               + 24 * num_train_edges + dense + activation * (encoder + scored * width))


def host_bytes(config: PLNLPConfig, info: DatasetInfo, num_nodes: int,
               num_train_edges: int) -> dict[str, int]:
    r"""What one training worker holds in host memory at its peak, by part:

    - ``graph``: the CSR adjacency (both directions, index and value, 12
      bytes an entry), the negative sampler's sorted edge keys (8 bytes an
      entry) and the positives (16 bytes an edge): :math:`52E + 12N`;
    - ``model``: :math:`16P` (weights, gradients, Adam's two moments); with
      ``fanouts`` the node embedding's gradients are a step's rows, so its
      :math:`N D` weights count 12 bytes each (weights and SparseAdam's moments);
    - ``features``: :math:`4 N F`, or 20 bytes a set entry where they are
      kept sparse (two int64 indices and a float32 value);
    - ``activations``: the encoder's, :math:`3 L N H` floats of 4 bytes:
      every full-batch step's, and evaluation's (which encodes every node
      with or without ``fanouts``); :math:`2 N H` when evaluation alone
      encodes every node and does so layer by layer (``fanouts`` with SAGE
      on :data:`~plnlp_core.nn.encoders.encoder.CHUNKED_FROM_NODES` nodes).
    """
    from plnlp_core.nn.encoders.encoder import CHUNKED_FROM_NODES

    parameters = parameter_count(config, info, num_nodes)
    embedding = num_nodes * config.embedding_dim if config.node_input != "features" else 0
    model = 16 * parameters
    if config.fanouts is not None:
        model -= 4 * embedding
    layers = 3 * config.encoder_layers
    if config.fanouts is not None and config.encoder == "sage" \
            and num_nodes >= CHUNKED_FROM_NODES:
        layers = 2
    return {"graph": 52 * num_train_edges + 12 * num_nodes, "model": model,
            "features": 4 * num_nodes * info.feature_dim if info.feature_entries is None
            else 20 * info.feature_entries,
            "activations": 4 * layers * num_nodes * config.hidden_channels}


def refuse_past_memory(config: PLNLPConfig, info: DatasetInfo, num_nodes: int,
                       num_train_edges: int, available: int) -> None:
    """Refuses, before training, a run whose worker would need more host
    memory (:func:`host_bytes`) than ``available`` bytes (the largest
    node's), naming the parts and what to change."""
    parts = host_bytes(config, info, num_nodes, num_train_edges)
    total = sum(parts.values())
    if total <= available:
        return
    sizes = ", ".join(f"{name} {value / GIB:.1f}" for name, value in parts.items())
    how = ("full batch" if config.fanouts is None
           else f"with fanouts {list(config.fanouts)}")
    fix = ("set fanouts (--set fanouts=[15,10]) to train on sampled neighbourhoods, or run "
           "on a node with more memory" if config.fanouts is None else
           "lower embedding_dim or hidden_channels, leave the node features out "
           "(node_input=embedding), or run on a node with more memory")
    raise PLNLPError(f"training {info.name} {how} needs about {total / GIB:.1f} GiB on one "
                     f"worker ({sizes} GiB) and the largest Ray node has "
                     f"{available / GIB:.1f} GiB; {fix}.")
