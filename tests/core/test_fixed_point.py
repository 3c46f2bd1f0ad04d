"""Products of 0/1 matrices on int8 digits: exact enough to stand in for
fp32's, and the common-neighbour product through them."""
import pytest
import torch

from plnlp_core.graph import build_adjacency
from plnlp_core.nn.edge_level.bit_rows import BitRows, dense_common_neighbor_sum
from plnlp_core.nn.edge_level.common_neighbors import AdjacencyLookup
from plnlp_core.nn.edge_level.fixed_point import FixedPoint
from tests.core.test_common_neighbors import dense, exact, random_graph, some_pairs


def columns_of_every_size(rows: int, seed: int) -> torch.Tensor:
    """Columns from 1e-25 to 1e30, one of zeros and one of ones."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 9, generator=g) * torch.logspace(-25, 30, 9)
    x[:, 3] = 0
    x[:, 4] = 1
    x[: rows // 3, 5] *= 1e-9  # a column whose entries span nine decades
    return x


def test_a_matrix_is_written_to_within_2_to_the_minus_30_of_its_columns_largest():
    x = columns_of_every_size(200, 0)
    fixed = FixedPoint(x)
    assert fixed.digits.dtype == torch.int8 and fixed.digits.shape == (200, 4 * 9)
    back = fixed.value(fixed.product(torch.eye(200, dtype=torch.int8))).double()
    largest = x.abs().amax(0).double()
    error = (back - x.double()).abs()
    assert (error <= 2**-30 * largest).all()
    near_largest = x.abs() >= largest.float() / 2**6  # these are written exactly
    assert torch.equal(back.float()[near_largest], x[near_largest])
    tiny = torch.randn(50, 1) * 1e-35  # below 2^-96: steps of 2^-126
    fixed = FixedPoint(tiny)
    back = fixed.value(fixed.product(torch.eye(50, dtype=torch.int8)))
    assert ((back - tiny).abs() <= 2**-127).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_products_with_0_1_matrices_are_more_exact_than_fp32s(seed):
    g = torch.Generator().manual_seed(seed)
    x = columns_of_every_size(3000, seed)
    mask = torch.rand(400, 3000, generator=g) < 0.3
    fixed = FixedPoint(x)
    total = fixed.value(fixed.product(mask.to(torch.int8)))
    exact = mask.double() @ x.double()
    scale = exact.abs().amax(0).clamp(min=1e-300)
    fp32_error = ((mask.float() @ x).double() - exact).abs() / scale
    error = (total.double() - exact).abs() / scale
    assert error.max() <= fp32_error.max()
    assert (error <= 2**-24).all()  # one rounding to fp32, and the digits' 2^-30 steps
    assert torch.equal(total[:, 4], mask.sum(1).float())  # counts: exact
    assert torch.equal(total[:, 3], torch.zeros(400))


def test_digit_sums_over_chunks_of_rows_add_up_to_the_whole_product():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(900, 5, generator=g)
    mask = (torch.rand(70, 900, generator=g) < 0.5).to(torch.int8)
    fixed = FixedPoint(x)
    parts = sum(fixed.product(mask[:, start:start + 200].contiguous(), slice(start, start + 200))
                for start in range(0, 900, 200))
    torch.testing.assert_close(fixed.value(parts), fixed.value(fixed.product(mask)),
                               rtol=0, atol=0)


@pytest.mark.parametrize("int8", [True, False])
def test_the_common_neighbour_product_is_the_dense_reference_on_int8_digits_or_not(
        int8, monkeypatch):
    """Forced either way (AMX or not on the machine that runs it): the same
    sums, counts and gradients as the dense reference."""
    monkeypatch.setattr("plnlp_core.nn.edge_level.bit_rows.int8_products", lambda device: int8)
    monkeypatch.setattr("plnlp_core.nn.edge_level.bit_rows.CPU_CHUNK_BYTES", 3 * 48)  # 3 rows
    edges = random_graph(45, 400, 11)  # 45 nodes: 6 bytes a row, the last part padding
    adj, _ = build_adjacency(edges, 45)
    pairs = some_pairs(edges, 45, 11)
    h = torch.randn(45, 6, requires_grad=True)
    total, count = dense_common_neighbor_sum(BitRows(AdjacencyLookup(adj).dense()), h, pairs)
    mask = dense(edges, 45)[pairs[:, 0]] * dense(edges, 45)[pairs[:, 1]]
    torch.testing.assert_close(total, exact(mask, h))
    torch.testing.assert_close(count, mask.sum(1).long(), rtol=0, atol=0)
    weights = torch.randn(total.shape)
    grad, = torch.autograd.grad((total * weights).sum(), h)
    torch.testing.assert_close(grad, exact(mask.t(), weights))
