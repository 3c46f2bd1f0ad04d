"""What the edge level keeps of evaluation's pairs: the same sums, counts
and path counts as made anew, never for another pair set or another graph,
within its budget, and nothing of training's pairs."""
import pytest
import torch

from plnlp_core.assembly import build_model
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS
from plnlp_core.edge_set import EdgeSet
from plnlp_core.graph import build_adjacency
from plnlp_core.nn.edge_level import intersection
from plnlp_core.nn.edge_level.common_neighbor_lists import CommonNeighborLists
from plnlp_core.nn.edge_level.common_neighbors import (
    AdjacencyLookup,
    common_neighbor_index,
    common_neighbor_sum,
    path3_counts,
    remove_edges,
)
from plnlp_core.sampling import SAMPLERS
from plnlp_core.scoring.evaluation import evaluate, score_pairs
from plnlp_core.training.epoch import StepOptions, draw_batch, train_step
from tests.core.test_common_neighbors import SMALL, dense, exact, random_graph, some_pairs


@pytest.mark.parametrize("dense_row_cost", [0, 10**9])  # the CSR walk, the bit rows
@pytest.mark.parametrize("seed,num_nodes,num_edges", [(0, 30, 120), (1, 70, 400), (2, 12, 20)])
def test_remembered_pairs_get_the_sums_counts_and_paths_made_anew(
        seed, num_nodes, num_edges, dense_row_cost, monkeypatch):
    monkeypatch.setattr("plnlp_core.nn.edge_level.common_neighbors.DENSE_ROW_COST",
                        dense_row_cost)
    edges = random_graph(num_nodes, num_edges, seed)
    adj, _ = build_adjacency(edges, num_nodes)
    pairs = some_pairs(edges, num_nodes, seed)  # half edges, half random pairs
    lookup = AdjacencyLookup(adj)
    h = torch.randn(num_nodes, 5, generator=torch.Generator().manual_seed(seed))
    fresh_total, fresh_count = common_neighbor_sum(lookup, h, pairs)
    fresh_paths = path3_counts(lookup, pairs)
    lookup.memo.remember(pairs)
    for _ in range(2):  # made and kept, then read
        total, count = common_neighbor_sum(lookup, h, pairs)
        torch.testing.assert_close(total, fresh_total)
        assert torch.equal(count, fresh_count)
        assert torch.equal(path3_counts(lookup, pairs), fresh_paths)
    assert lookup.memo.nbytes > 0
    other_h = torch.randn(num_nodes, 5)  # new node vectors, the same lists
    mask = dense(edges, num_nodes)[pairs[:, 0]] * dense(edges, num_nodes)[pairs[:, 1]]
    torch.testing.assert_close(common_neighbor_sum(lookup, other_h, pairs)[0], exact(mask, other_h))


def test_lists_from_the_bit_rows_are_those_of_the_csr_walk():
    edges = random_graph(50, 500, 3)
    adj, _ = build_adjacency(edges, 50)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 50, 3)
    from_bits = CommonNeighborLists.from_bit_rows(lookup.bit_rows(), pairs)
    walked = CommonNeighborLists.from_index(*common_neighbor_index(lookup, pairs), pairs.size(0))
    assert torch.equal(from_bits.count, walked.count)
    assert torch.equal(from_bits.nodes, walked.nodes) and from_bits.nodes.dtype == torch.int32
    assert torch.equal(from_bits.offsets, walked.offsets)
    assert CommonNeighborLists.max_bytes(lookup.degree, pairs) >= 4 * walked.nodes.numel()


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tests", ["bit words", "table", "merge"])
@pytest.mark.parametrize("seed,num_nodes,num_edges", [(3, 50, 500), (4, 200, 300), (5, 9, 0),
                                                      (6, 150, 4000)])
def test_lists_of_the_compiled_loops_are_those_of_the_csr_walk(seed, num_nodes, num_edges,
                                                               tests, threads, monkeypatch):
    """Found in the rows' bit words (the dense graphs' pairs by ANDing
    words, the sparse graph's by testing bits), in the dense table or by
    merging CSR rows, on dense, sparse and edgeless graphs, on one thread or
    in parallel: the same counts and the same ascending lists."""
    monkeypatch.setattr(intersection, "PARALLEL_PAIRS", 0)
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    edges = random_graph(num_nodes, num_edges, seed) if num_edges else torch.zeros(
        0, 2, dtype=torch.long)
    adj, _ = build_adjacency(edges, num_nodes)
    lookup = AdjacencyLookup(adj)
    pairs = torch.randint(num_nodes, (300, 2), generator=torch.Generator().manual_seed(seed))
    if num_edges:
        pairs = torch.cat([pairs, edges[:100]])
    compiled = CommonNeighborLists.from_csr(
        lookup.crow, lookup.col, lookup.degree, pairs, lookup.table if tests == "table" else None,
        lookup.bit_words() if tests == "bit words" else None)
    walked = CommonNeighborLists.from_index(*common_neighbor_index(lookup, pairs), pairs.size(0))
    assert torch.equal(compiled.count, walked.count)
    assert torch.equal(compiled.nodes, walked.nodes) and compiled.nodes.dtype == torch.int32
    assert torch.equal(compiled.offsets, walked.offsets)


def test_a_memo_serves_only_the_pair_set_it_was_asked_to_remember():
    edges = random_graph(40, 300, 4)
    adj, _ = build_adjacency(edges, 40)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 40, 4)
    h = torch.randn(40, 3)
    lookup.memo.remember(pairs)
    common_neighbor_sum(lookup, h, pairs)
    kept = lookup.memo.nbytes
    other = pairs.clone()
    other[1:-1] = other[1:-1].flip(0)  # same size, same first and last pair: the same first test
    assert not torch.equal(other, pairs)
    total, count = common_neighbor_sum(lookup, h, other)
    mask = dense(edges, 40)[other[:, 0]] * dense(edges, 40)[other[:, 1]]
    torch.testing.assert_close(total, exact(mask, h))
    assert torch.equal(count, mask.sum(1).long())
    assert lookup.memo.nbytes == kept and len(lookup.memo) == 1


def test_past_its_budget_a_memo_keeps_nothing_and_the_sums_stay_right(monkeypatch):
    monkeypatch.setattr("plnlp_core.nn.edge_level.pair_memo.MEMORY_SHARE", 0.0)
    edges = random_graph(40, 300, 5)
    adj, _ = build_adjacency(edges, 40)
    lookup = AdjacencyLookup(adj)
    pairs = some_pairs(edges, 40, 5)
    h = torch.randn(40, 3)
    lookup.memo.remember(pairs)
    total, _ = common_neighbor_sum(lookup, h, pairs)
    path3_counts(lookup, pairs)
    mask = dense(edges, 40)[pairs[:, 0]] * dense(edges, 40)[pairs[:, 1]]
    torch.testing.assert_close(total, exact(mask, h))
    assert lookup.memo.nbytes == 0


def edge_level_model(num_nodes: int, path_length: int = 3) -> torch.nn.Module:
    torch.manual_seed(0)
    config = PLNLPConfig.from_mapping({**SMALL, "edge_path_length": path_length})
    return build_model(config, DATASETS.get("ddi"), num_nodes)


def test_evaluation_on_another_graph_never_reads_the_first_graphs_memo():
    """As collab's test evaluation reads the training and validation edges:
    the scores on each graph are those made without any memo, whatever
    graph came before."""
    edges = random_graph(40, 260, 6)
    train, more = edges[:200], edges[200:]
    pairs = some_pairs(edges, 40, 6)
    graphs = [build_adjacency(train, 40)[0], build_adjacency(torch.cat([train, more]), 40)[0]]
    model = edge_level_model(40)
    model.eval()
    with torch.no_grad():
        expected = [score_pairs(model, model.encode(None, adj), pairs, 16, adj) for adj in graphs]
        assert not torch.allclose(expected[0], expected[1])
        for adj, scores in [(graphs[0], expected[0]), (graphs[1], expected[1]),
                            (graphs[0], expected[0]), (graphs[0], expected[0])]:
            h = model.encode(None, adj)
            got = score_pairs(model, h, pairs, 16, adj, repeated=True)
            torch.testing.assert_close(got, scores)
            assert model.lookup(adj).memo.nbytes > 0


def test_fit_keeps_its_splits_and_training_steps_keep_nothing(ddi_standin_split):
    split = ddi_standin_split
    model = edge_level_model(split.num_nodes, path_length=2)
    from plnlp_core.assembly import build_training_graph

    config = PLNLPConfig.from_mapping(SMALL)
    graph = build_training_graph(split, config)
    sampler = SAMPLERS.get("global")(EdgeSet(split.train_pos, split.num_nodes, True))
    model.train()
    train_step(model, torch.optim.Adam(model.parameters()), None, graph.adj,
               draw_batch(split.train_pos[:64], None, sampler, 2, "shared",
                          torch.Generator().manual_seed(0)), StepOptions.from_config(config))
    assert len(model.lookup(graph.adj).memo) == 0
    splits = {"valid": (split.valid_pos, split.valid_neg), "test": (split.test_pos, split.test_neg)}
    first = evaluate(model, split.info, None, graph.adj, splits, 1024)
    memo = model.lookup(graph.adj).memo
    assert len(memo) == 4 and memo.nbytes > 0  # 4 chunks: each split's positives, negatives
    assert evaluate(model, split.info, None, graph.adj, splits, 1024) == first
    assert len(memo) == 4


@pytest.mark.parametrize("bit_rows_first", [True, False])
def test_a_graph_without_some_edges_is_looked_up_as_one_made_anew(bit_rows_first):
    edges = random_graph(37, 250, 8)
    adj, _ = build_adjacency(edges, 37)
    lookup = AdjacencyLookup(adj)
    if bit_rows_first:
        lookup.bit_rows()  # then the smaller graph's come from these
    pairs = torch.cat([edges[:40], random_graph(37, 30, 9), edges[:5]])  # repeats, non-edges
    reduced = lookup.without(pairs)
    anew = AdjacencyLookup(remove_edges(lookup, pairs))
    assert torch.equal(reduced.adj.to_dense(), anew.adj.to_dense())
    assert not reduced.edge_set.table_made  # made when first read
    assert torch.equal(reduced.keys, anew.keys) and torch.equal(reduced.table, anew.table)
    assert torch.equal(reduced.degree, anew.degree)
    assert torch.equal(reduced.bit_rows().bits, anew.bit_rows().bits)
    assert torch.equal(lookup.bit_rows().bits, AdjacencyLookup(adj).bit_rows().bits)  # untouched
