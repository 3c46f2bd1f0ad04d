"""The table of losses by name; each loss module registers itself here."""
from collections.abc import Callable

from torch import Tensor

from plnlp_core.registry import Registry

LossFn = Callable[[Tensor, Tensor, Tensor | None], Tensor]

LOSSES: Registry[LossFn] = Registry("loss")
