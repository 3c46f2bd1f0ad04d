import torch
from torch import Tensor, nn

from plnlp_core.edge_set import EdgeSet
from plnlp_core.sampling.model_guided import ModelGuidedSampler
from plnlp_core.sampling.registry import SAMPLERS


@SAMPLERS.register("adversarial")
class AdversarialSampler(ModelGuidedSampler):
    r"""Adversarial negative sampling (paper §4.4's future work, after
    KBGAN, Cai and Wang 2018): a generator with node embeddings
    :math:`\mathbf{g}` draws one of the :math:`C` candidates of each
    positive's anchor,

    .. math::
        p_\phi(k \mid i) = \frac{\exp(\mathbf{g}_i^\top \mathbf{g}_k)}
        {\sum_{(v_i, v_c) \in \mathcal{C}_i} \exp(\mathbf{g}_i^\top \mathbf{g}_c)},

    and is trained by policy gradient to propose negatives the link
    predictor (the discriminator, the PLNLP model itself) scores high,

    .. math::
        \nabla_\phi J = \mathbb{E}_{k \sim p_\phi}\left[(s_{ik} - b)\,
        \nabla_\phi \log p_\phi(k \mid i)\right],

    with :math:`b` a running mean of the rewards :math:`s_{ik}`. The
    generator takes one Adam step per draw.

    Args:
        edge_set (EdgeSet): The observed edges to avoid.
        degree (Tensor): Node degrees in the training graph, shape ``[N]``.
        pool_size (int): Candidates per positive, :math:`C`.
        dim (int): Size of the generator's node embeddings.
        lr (float): The generator's learning rate.
        baseline_momentum (float): Weight of the old baseline in each update.
    """

    def __init__(self, edge_set: EdgeSet, degree: Tensor, pool_size: int, dim: int = 64,
                 lr: float = 0.01, baseline_momentum: float = 0.9) -> None:
        super().__init__(edge_set, degree, pool_size)
        self.embedding = nn.Embedding(edge_set.num_nodes, dim).to(edge_set.device)
        nn.init.normal_(self.embedding.weight, std=0.1)
        self.optimizer = torch.optim.Adam(self.embedding.parameters(), lr=lr)
        self.baseline_momentum = baseline_momentum
        self.baseline = torch.zeros((), device=edge_set.device)

    def choose(self, pool: Tensor, generator: torch.Generator | None) -> Tensor:
        self.embedding.to(pool.device)
        self.baseline = self.baseline.to(pool.device)
        log_probs = self.log_probs(pool)  # [C, m]
        picked = torch.multinomial(log_probs.detach().exp().t(), 1, generator=generator)[:, 0]
        columns = torch.arange(pool.size(1), device=pool.device)
        with torch.no_grad():
            reward = self.scorer(pool[picked, columns]).float()
        advantage = reward - self.baseline
        loss = -(advantage * log_probs[picked, columns]).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        momentum = self.baseline_momentum
        self.baseline = momentum * self.baseline + (1 - momentum) * reward.mean()
        return picked

    def log_probs(self, pool: Tensor) -> Tensor:
        r""":math:`\log p_\phi(k \mid i)` of every candidate, shape ``[C, m]``."""
        anchor = self.embedding(pool[..., 0])
        candidate = self.embedding(pool[..., 1])
        return torch.log_softmax((anchor * candidate).sum(dim=-1), dim=0)

    def state_dict(self) -> dict:
        return {"embedding": self.embedding.state_dict(), "optimizer": self.optimizer.state_dict(),
                "baseline": self.baseline.detach().cpu()}

    def load_state_dict(self, state: dict) -> None:
        self.embedding.load_state_dict(state["embedding"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.baseline = state["baseline"].to(self.embedding.weight.device)

    def __repr__(self) -> str:
        return (f"AdversarialSampler(num_nodes={self.num_nodes}, pool_size={self.pool_size}, "
                f"dim={self.embedding.embedding_dim})")
