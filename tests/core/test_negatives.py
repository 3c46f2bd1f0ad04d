"""num_neg negatives per positive, shared (the paper) or independent (the
authors' samplers): never an observed edge, and local negatives always keep
their positive's anchor."""
import pytest
import torch

from plnlp_core.assembly import build_negative_sampler
from plnlp_core.config import PLNLPConfig
from plnlp_core.edge_set import EdgeSet
from plnlp_core.graph import build_adjacency
from plnlp_core.sampling import draw_negatives

NUM_NODES = 30


def ring_with_chords() -> torch.Tensor:
    ring = [[i, (i + 1) % NUM_NODES] for i in range(NUM_NODES)]
    chords = [[i, (i + 7) % NUM_NODES] for i in range(NUM_NODES)]
    return torch.tensor(ring + chords)


def sampler_for(name: str, edges: torch.Tensor):
    _, degree = build_adjacency(edges, NUM_NODES)
    return build_negative_sampler(PLNLPConfig(sampler=name),
                                  EdgeSet(edges, NUM_NODES, undirected=True), degree)


def known_pairs(edges: torch.Tensor) -> set[tuple[int, int]]:
    return {(u, v) for u, v in edges.tolist()} | {(v, u) for u, v in edges.tolist()}


@pytest.mark.parametrize("mode", ["shared", "independent"])
@pytest.mark.parametrize("num_neg", [1, 3, 5])
def test_local_negatives_keep_the_anchor_of_every_positive(mode, num_neg):
    edges = ring_with_chords()
    pos = torch.cat([edges, edges.flip(-1)])
    drawn = draw_negatives(pos, sampler_for("local", edges), num_neg, mode,
                           torch.Generator().manual_seed(0))
    ranked = drawn.pairs[drawn.index]  # [m, num_neg, 2]
    assert ranked.shape == (pos.size(0), num_neg, 2)
    assert torch.equal(ranked[:, :, 0], pos[:, :1].expand(-1, num_neg))


@pytest.mark.parametrize("name", ["global", "local"])
@pytest.mark.parametrize("mode", ["shared", "independent"])
def test_negatives_are_never_an_observed_edge_or_a_self_loop(name, mode):
    edges = ring_with_chords()
    pos = edges.repeat(5, 1)
    drawn = draw_negatives(pos, sampler_for(name, edges), 4, mode,
                           torch.Generator().manual_seed(1))
    pairs = {(u, v) for u, v in drawn.pairs[drawn.index].reshape(-1, 2).tolist()}
    assert not pairs & known_pairs(edges)
    assert all(u != v for u, v in pairs)


def test_shared_global_negatives_are_m_distinct_pairs_reused_by_permutation():
    edges = ring_with_chords()
    pos = edges
    drawn = draw_negatives(pos, sampler_for("global", edges), 3, "shared",
                           torch.Generator().manual_seed(2))
    m = pos.size(0)
    assert drawn.pairs.shape == (m, 2)
    assert torch.equal(drawn.index[:, 0], torch.arange(m))
    for t in range(3):
        assert torch.equal(drawn.index[:, t].sort().values, torch.arange(m))


def test_shared_local_negatives_share_the_drawn_endpoints():
    edges = ring_with_chords()
    pos = edges
    drawn = draw_negatives(pos, sampler_for("local", edges), 3, "shared",
                           torch.Generator().manual_seed(3))
    ranked = drawn.pairs[drawn.index]
    # every column draws its endpoints from the first column's pool, except
    # the few shared pairs that were edges and were drawn again
    pool = ranked[:, 0, 1].tolist()
    for t in (1, 2):
        reused = sum(v in pool for v in ranked[:, t, 1].tolist())
        assert reused >= 0.6 * pos.size(0)


@pytest.mark.parametrize("name", ["global", "local"])
def test_independent_negatives_are_num_neg_fresh_draws_per_positive(name):
    edges = ring_with_chords()
    pos = edges
    drawn = draw_negatives(pos, sampler_for(name, edges), 3, "independent",
                           torch.Generator().manual_seed(4))
    m = pos.size(0)
    assert drawn.pairs.shape == (3 * m, 2)
    assert torch.equal(drawn.index, torch.arange(3 * m).view(m, 3))
    # fresh draws: the columns are not permutations of one another
    assert not torch.equal(drawn.pairs[drawn.index[:, 1]].sort(0).values,
                           drawn.pairs[drawn.index[:, 0]].sort(0).values)
