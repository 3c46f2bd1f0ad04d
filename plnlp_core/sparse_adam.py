r"""Adam for a model whose node embeddings have sparse gradients
(neighbour-sampled training): the dense parameters step with
:class:`~torch.optim.Adam`, the embedding tables with :class:`RowAdam`,
which updates only the rows a step read (lazy Adam, as
:class:`~torch.optim.SparseAdam`: a row's moments move only on the steps
that touch it), at step :math:`t`

.. math::
    \mathbf{m}_r \leftarrow \beta_1 \mathbf{m}_r + (1 - \beta_1)\,\mathbf{g}_r, \quad
    \mathbf{v}_r \leftarrow \beta_2 \mathbf{v}_r + (1 - \beta_2)\,\mathbf{g}_r^2, \quad
    \mathbf{e}_r \leftarrow \mathbf{e}_r - \eta\,
    \frac{\sqrt{1 - \beta_2^t}}{1 - \beta_1^t}
    \frac{\mathbf{m}_r}{\sqrt{\mathbf{v}_r} + \epsilon}
    \quad \text{for each row } r \text{ the step read,}

so that a step costs the rows it touched, not the whole table, and no
dense gradient of the table is ever made.
"""
import math

import torch
from torch import Tensor, nn


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
        self.sparse = RowAdam(sparse, lr=lr)
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


class RowAdam(torch.optim.Optimizer):
    """:class:`~torch.optim.SparseAdam`'s update, made with dense row
    gathers and scatters (``index_select``, ``index_copy_``,
    ``index_add_``) instead of sparse tensor arithmetic: on 405,000 rows of
    a 64-wide table on 2 CPU cores, SparseAdam's step took 2.5 s, most of
    it in sparse ``mul`` and ``add``.

    Args:
        params (list): Parameters whose gradients are sparse (COO, rows).
        lr (float): The learning rate :math:`\\eta`.
        betas (tuple): :math:`\\beta_1, \\beta_2`. (default: ``(0.9, 0.999)``)
        eps (float): :math:`\\epsilon`. (default: ``1e-8``)
    """

    def __init__(self, params: list[nn.Parameter], lr: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure: None = None) -> None:
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                if param.grad is None:
                    continue
                rows, grad = gradient_rows(param.grad)
                state = self.state[param]
                if not state:
                    state.update(step=0, exp_avg=torch.zeros_like(param),
                                 exp_avg_sq=torch.zeros_like(param))
                state["step"] += 1
                m = state["exp_avg"].index_select(0, rows).lerp_(grad, 1 - beta1)
                v = state["exp_avg_sq"].index_select(0, rows).mul_(beta2)
                v.addcmul_(grad, grad, value=1 - beta2)
                state["exp_avg"].index_copy_(0, rows, m)
                state["exp_avg_sq"].index_copy_(0, rows, v)
                t = state["step"]
                step_size = group["lr"] * math.sqrt(1 - beta2**t) / (1 - beta1**t)
                param.index_add_(0, rows, m.div_(v.sqrt_().add_(group["eps"])),
                                 alpha=-step_size)


def gradient_rows(grad: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct rows of a sparse row gradient and their summed values
    (a step that read a row twice, or DDP's gathered gradients, repeat it)."""
    if grad.is_coalesced():
        return grad.indices()[0], grad.values()
    rows, inverse = grad._indices()[0].unique(return_inverse=True)
    values = grad._values()
    summed = torch.zeros(rows.numel(), *values.shape[1:], dtype=values.dtype,
                         device=values.device)
    return rows, summed.index_add_(0, inverse, values)


def sparse_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``model``'s embedding tables with sparse gradients."""
    return [module.weight for module in model.modules()
            if isinstance(module, nn.Embedding) and module.sparse]
