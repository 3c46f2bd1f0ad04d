r"""Adam for a model whose node embeddings have sparse gradients
(neighbour-sampled training): the dense parameters step with
:class:`~torch.optim.Adam`, the embedding tables with
:class:`~torch.optim.SparseAdam`, which updates only the rows a step read
(lazy Adam: a row's moments decay only on the steps that touch it),

.. math::
    \mathbf{m}_r \leftarrow \beta_1 \mathbf{m}_r + (1 - \beta_1)\,\mathbf{g}_r, \quad
    \mathbf{v}_r \leftarrow \beta_2 \mathbf{v}_r + (1 - \beta_2)\,\mathbf{g}_r^2, \quad
    \mathbf{e}_r \leftarrow \mathbf{e}_r - \eta\,
    \frac{\hat{\mathbf{m}}_r}{\sqrt{\hat{\mathbf{v}}_r} + \epsilon}
    \quad \text{for each row } r \text{ the step read,}

so that a step costs the rows it touched, not the whole table, and no
dense gradient of the table is ever made.
"""
import torch
from torch import nn


class DenseAndSparseAdam(torch.optim.Optimizer):
    """Two Adams behind one optimiser, so that a learning-rate schedule,
    a checkpoint and the training step treat them as one.

    Args:
        dense_groups (list): Parameter groups of the dense parameters.
        sparse (list): The parameters whose gradients are sparse.
        lr (float): The sparse parameters' learning rate.
        fused (bool, optional): Fuse the dense Adam into one kernel.
    """

    def __init__(self, dense_groups: list[dict[str, object]], sparse: list[nn.Parameter],
                 lr: float, fused: bool | None = None) -> None:
        self.dense = torch.optim.Adam(dense_groups, fused=fused)
        self.sparse = torch.optim.SparseAdam(sparse, lr=lr)
        # both Adams' groups, the same dicts: a schedule that sets one's lr sets its Adam's
        self.defaults = self.dense.defaults
        self.param_groups = self.dense.param_groups + self.sparse.param_groups
        self.state = self.dense.state
        self._optimizer_step_pre_hooks = {}
        self._optimizer_step_post_hooks = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.dense.zero_grad(set_to_none)
        self.sparse.zero_grad(set_to_none)

    def step(self, closure: None = None) -> None:
        self.dense.step()
        self.sparse.step()

    def state_dict(self) -> dict[str, object]:
        return {"dense": self.dense.state_dict(), "sparse": self.sparse.state_dict()}

    def load_state_dict(self, state_dict: dict[str, object]) -> None:
        self.dense.load_state_dict(state_dict["dense"])
        self.sparse.load_state_dict(state_dict["sparse"])

    def __repr__(self) -> str:
        return f"DenseAndSparseAdam({self.dense!r}, {self.sparse!r})"


def sparse_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model``'s embedding tables with sparse gradients."""
    return [module.weight for module in model.modules()
            if isinstance(module, nn.Embedding) and module.sparse]
