"""Negative sample sharing: m negatives are drawn and scored once, and
reused through permutations so the loss sees m * num_neg pairs."""
import pytest
import torch
from torch import nn

from plnlp_core.graph import build_adjacency
from plnlp_core.losses import auc_loss
from plnlp_core.nn import GNNEncoder, NodeInput, PLNLPModel
from plnlp_core.sampling import share_negatives
from plnlp_core.training.epoch import PairBatch, StepOptions, train_step


@pytest.mark.parametrize(("m", "num_neg"), [(7, 1), (7, 3), (50, 5)])
def test_share_negatives_gives_arange_then_permutations(m, num_neg):
    index = share_negatives(m, num_neg, torch.Generator().manual_seed(0))
    assert index.shape == (m, num_neg)
    assert index.dtype == torch.long
    assert torch.equal(index[:, 0], torch.arange(m))
    for t in range(num_neg):
        assert torch.equal(index[:, t].sort().values, torch.arange(m))


def test_share_negatives_columns_after_the_first_are_shuffled():
    index = share_negatives(50, 3, torch.Generator().manual_seed(0))
    assert not torch.equal(index[:, 1], torch.arange(50))
    assert not torch.equal(index[:, 1], index[:, 2])


class CountingPredictor(nn.Module):
    """Wraps a predictor and records how many rows each call scores."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.rows: list[int] = []

    def forward(self, h_src: torch.Tensor, h_dst: torch.Tensor) -> torch.Tensor:
        self.rows.append(h_src.size(0))
        return self.inner(h_src, h_dst)


def test_train_step_scores_each_distinct_negative_once_and_ranks_m_times_num_neg_pairs():
    torch.manual_seed(0)
    num_nodes, m, num_neg = 12, 6, 3
    edges = torch.tensor([[i, (i + 1) % num_nodes] for i in range(num_nodes)])
    adj, _ = build_adjacency(edges, num_nodes)
    node_input = NodeInput("embedding", num_nodes, 8, 0)
    model = PLNLPModel(node_input, GNNEncoder("sage", 8, 8, 1), "dot", 8, 2, 0.0)
    counter = CountingPredictor(model.predictor)
    model.predictor = counter
    seen = {}

    def recording_loss(pos, neg, weight):
        seen["pos"], seen["neg"] = pos.detach().clone(), neg.detach().clone()
        return auc_loss(pos, neg, weight)

    pos = edges[:m]
    neg = torch.tensor([[i, (i + 5) % num_nodes] for i in range(m)])
    index = share_negatives(m, num_neg, torch.Generator().manual_seed(1))
    batch = PairBatch(pos, None, neg, index)
    with torch.no_grad():
        expected_neg_scores = model(None, adj, neg)
    counter.rows.clear()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    train_step(model, optimizer, None, adj, batch, StepOptions(recording_loss))

    assert counter.rows == [2 * m]
    assert seen["pos"].shape == (m,)
    assert seen["neg"].shape == (m, num_neg)
    assert seen["neg"].numel() == m * num_neg
    torch.testing.assert_close(seen["neg"], expected_neg_scores[index])
