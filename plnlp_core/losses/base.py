from torch import Tensor, nn


class RankingLoss(nn.Module):
    r"""A pairwise ranking loss of one's own (paper §4.3), named by import
    path (``loss: my_parts.losses:MarginLoss``): the base class it
    subclasses, as the built-in losses' functions (:func:`auc_loss`, ...)
    are called,

    .. math::
        \mathcal{L} = \sum_{i=1}^{m} \sum_{t=1}^{K}
        \ell\left(s^+_i, s^-_{i,t}; \gamma_i\right),

    a **sum** over pairs, so that a batch split across workers adds up to
    the loss of the whole batch. Its constructor takes its own settings
    alone (``loss_options``).

    Attributes:
        weighted (bool): Whether it reads a per-positive weight
            :math:`\gamma_i` (the margins ``edge_margin`` makes); without it
            the weight is ``None``. (default: ``False``)

    Shapes:
        - **input:** positive scores :math:`(m)`, negative scores
          :math:`(m, K)`, weights :math:`(m)` or ``None``
        - **output:** :math:`()`, the sum
    """

    weighted = False

    def forward(self, pos: Tensor, neg: Tensor, weight: Tensor | None = None) -> Tensor:
        raise NotImplementedError
