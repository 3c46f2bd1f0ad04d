"""The hard and adversarial samplers: candidates keep the anchor and are
never observed edges; hard picks the model's top candidate; the
adversarial generator learns to propose what the model scores high."""
import pytest
import torch

from plnlp_core.assembly import build_negative_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError
from plnlp_core.graph import build_adjacency
from plnlp_core.sampling import AdversarialSampler, HardSampler, draw_negatives

NUM_NODES = 40


def dense_graph() -> torch.Tensor:
    """Every node linked to the next eight: a fifth of all pairs are edges."""
    return torch.tensor([[i, (i + d) % NUM_NODES] for i in range(NUM_NODES) for d in range(1, 9)])


def make(name: str, edges: torch.Tensor, **settings: object):
    _, degree = build_adjacency(edges, NUM_NODES)
    edge_set = EdgeSet(edges, NUM_NODES, undirected=True)
    return build_negative_sampler(PLNLPConfig(sampler=name, **settings), edge_set, degree)


def by_endpoint(pairs: torch.Tensor) -> torch.Tensor:
    """A scorer that prefers larger second endpoints."""
    return pairs[:, 1].float()


@pytest.mark.parametrize("name", ["hard", "adversarial"])
@pytest.mark.parametrize("mode", ["shared", "independent"])
def test_model_guided_samplers_keep_the_anchor_and_never_return_an_edge(name, mode):
    edges = dense_graph()
    sampler = make(name, edges, candidate_pool=6)
    sampler.observe(by_endpoint)
    pos = edges[torch.randint(edges.size(0), (500,), generator=torch.Generator().manual_seed(0))]
    drawn = draw_negatives(pos, sampler, 3, mode, torch.Generator().manual_seed(1))
    observed = {(int(a), int(b)) for a, b in edges} | {(int(b), int(a)) for a, b in edges}
    assert not any((int(a), int(b)) in observed or a == b for a, b in drawn.pairs)
    anchors = drawn.pairs[drawn.index][..., 0]
    assert torch.equal(anchors, pos[:, :1].expand(-1, 3))


def test_hard_sampler_returns_the_highest_scored_of_its_candidates(monkeypatch):
    sampler = make("hard", dense_graph(), candidate_pool=5)
    sampler.observe(by_endpoint)
    pools = []
    real_pool = HardSampler.candidate_pool
    monkeypatch.setattr(HardSampler, "candidate_pool",
                        lambda self, pos, g: pools.append(real_pool(self, pos, g)) or pools[-1])
    pos = dense_graph()[:50]
    neg = sampler(pos, torch.Generator().manual_seed(0))
    assert torch.equal(neg[:, 1], pools[0][..., 1].max(dim=0).values)


def test_adversarial_generator_learns_to_propose_what_the_model_scores_high():
    # a toy discriminator that scores pairs ending in one of four nodes 1,
    # all others 0: the generator should learn to propose those four
    edges = dense_graph()
    hard_nodes = torch.tensor([3, 17, 25, 33])

    def scorer(pairs):
        return torch.isin(pairs[:, 1], hard_nodes).float()

    sampler = make("adversarial", edges, candidate_pool=8, generator_lr=0.05)
    sampler.observe(scorer)
    pos = edges[torch.arange(0, edges.size(0), 2)]
    generator = torch.Generator().manual_seed(0)

    def hard_share(chooser) -> float:
        shares = [torch.isin(chooser(pos, generator)[:, 1], hard_nodes).float().mean()
                  for _ in range(3)]
        return float(sum(shares)) / 3

    # the hard sampler picks a hard node whenever the pool holds one: the
    # most any chooser can reach
    oracle = make("hard", edges, candidate_pool=8)
    oracle.observe(scorer)
    best = hard_share(oracle)
    before = hard_share(sampler)
    for _ in range(300):
        sampler(pos, generator)
    after = hard_share(sampler)
    assert before < 0.4 * best
    assert after > 0.85 * best


def test_a_model_guided_sampler_draws_only_after_it_observed_a_model():
    sampler = make("hard", dense_graph())
    with pytest.raises(RuntimeError, match="observe"):
        sampler(dense_graph()[:3])


def test_a_candidate_pool_larger_than_the_graph_is_refused():
    with pytest.raises(PLNLPError, match="candidate_pool 40 does not fit a graph of 40 nodes"):
        make("adversarial", dense_graph(), candidate_pool=40)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("candidate_pool", 0, "candidate_pool must be at least 1"),
    ("generator_dim", 0, "generator_dim must be at least 1"),
    ("generator_lr", 0.0, "generator_lr must be positive"),
])
def test_impossible_generator_settings_are_refused(key, value, message):
    with pytest.raises(PLNLPError, match=message):
        PLNLPConfig(sampler="adversarial", **{key: value}).validate()


def test_adversarial_state_round_trips_into_a_fresh_sampler():
    sampler = make("adversarial", dense_graph())
    sampler.observe(by_endpoint)
    sampler(dense_graph()[:20], torch.Generator().manual_seed(0))
    fresh = make("adversarial", dense_graph())
    fresh.load_state_dict(sampler.state_dict())
    assert isinstance(fresh, AdversarialSampler)
    assert torch.equal(fresh.embedding.weight, sampler.embedding.weight)
    assert torch.equal(fresh.baseline, sampler.baseline)


def test_shared_negatives_redraw_only_the_rows_that_became_edges():
    # sharing recombines anchors with other positives' endpoints; only the
    # recombined pairs that are edges are drawn again, each draw a scoring pass
    edges = dense_graph()
    sampler = make("hard", edges, candidate_pool=4)
    scored = []
    sampler.observe(lambda pairs: scored.append(pairs.size(0)) or by_endpoint(pairs))
    pos = edges[torch.randint(edges.size(0), (400,), generator=torch.Generator().manual_seed(0))]
    drawn = draw_negatives(pos, sampler, 3, "shared", torch.Generator().manual_seed(1))
    assert scored[0] == 4 * 400
    assert sum(scored[1:]) < 4 * 400 * 3 / 2  # not every one of the 1,200 shared pairs
    assert drawn.pairs.size(0) == 1200
