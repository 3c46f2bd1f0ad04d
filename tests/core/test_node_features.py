"""Node features in the forms users keep them: wide, long (``id, feature[,
value]``) and lists (``id, features``), the same matrix from each, and one
sentence for each bad file."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from plnlp_core.data.node_features import read_node_features
from plnlp_core.data.own_graph import load_own_graph, own_node_features
from plnlp_core.errors import PLNLPError

IDS = pa.array([10, 11, 12, 13])
EXPECTED = torch.tensor([[1.0, 0, 0, 2.5], [0, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]])


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, text", [
    ("wide.csv", "id,a,b,c,d\n10,1,0,0,2.5\n11,0,0,0,0\n12,0,1,1,0\n13,0,0,0,1\n"),
    ("long.csv", "id,feature,value\n10,0,1\n10,3,2.5\n12,1,1\n12,2,1\n13,3,1\n"),
])
def test_the_wide_and_the_long_form_give_the_same_matrix(tmp_path, name, text):
    table = read_node_features(write(tmp_path, name, text), IDS)
    assert table.num_features == 4
    assert torch.equal(table.dense(), EXPECTED)


def test_a_long_row_of_value_zero_names_its_feature_and_sets_no_entry(tmp_path):
    """As the wide form keeps no entry for its zeros: a sparse table of
    explicit zeros would count them as set, and the density that decides
    sparse or dense with them."""
    path = write(tmp_path, "long.csv", "id,feature,value\n10,0,1\n10,3,2.5\n11,2,0\n12,1,1\n"
                                       "12,2,1\n13,3,1\n13,4,0\n")
    table = read_node_features(path, IDS)
    assert table.num_features == 5 and len(table.values) == 5 and (table.values != 0).all()
    assert torch.equal(table.dense()[:, :4], EXPECTED) and not table.dense()[:, 4].any()


def test_the_list_forms_mark_each_nodes_active_features(tmp_path):
    csv = write(tmp_path, "lists.csv", 'id,features\n10,0 3\n11,\n12,"[1, 2]"\n13,3;\n')
    parquet = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"id": [13, 12, 10], "features": [[3], [1, 2], [0, 3]]}), parquet)
    expected = (EXPECTED > 0).float()
    for path in (csv, parquet):
        table = read_node_features(path, IDS)
        assert torch.equal(table.dense(), expected), path
        assert len(table.rows) == 5  # the non-zero entries, nothing of nodes x features


def test_a_table_with_few_entries_set_reaches_the_model_sparse_and_a_fuller_one_dense(tmp_path):
    """At most 10 % set (and more than one column): a sparse COO tensor, so
    that no nodes x features table is made; the same values either way."""
    words = write(tmp_path, "lists.csv", "id,features\n10,0 39\n12,7 7 12\n13,39\n")
    sparse = read_node_features(words, IDS)
    x = sparse.tensor()
    assert sparse.kept_sparse and x.is_sparse and x.shape == (4, 40)
    assert x._nnz() == 5  # 3 % set; 7 listed twice is set once
    ring = "".join(f"{i},{10 + (i - 9) % 6}\n" for i in range(10, 16))  # 10-11-...-15-10
    own = load_own_graph(write(tmp_path, "edges.csv", "src,dst\n" + ring),
                         split="random:0.34,0.33,0.33", features=words)
    assert own.split.x.is_sparse and own.split.info.feature_entries == 5  # the memory estimate's
    assert torch.equal(x.to_dense(), sparse.dense()) and x.to_dense().max() == 1
    fuller = read_node_features(write(tmp_path, "wide.csv", "id,a,b,c,d\n10,1,0,0,2.5\n"
                                      "11,0,0,0,0\n12,0,1,1,0\n13,0,0,0,1\n"), IDS)
    assert not fuller.tensor().is_sparse and torch.equal(fuller.tensor(), EXPECTED)


def test_long_feature_names_are_numbered_in_sorted_order_and_a_node_without_rows_is_zero(
        tmp_path):
    path = write(tmp_path, "long.csv", "id,feature\n10,cat\n12,ant\n12,dog\n")
    table = read_node_features(path, IDS)
    assert table.num_features == 3
    assert table.dense().tolist() == [[0, 1, 0], [0, 0, 0], [1, 0, 1], [0, 0, 0]]


def test_rows_for_ids_the_graph_lacks_are_left_out_and_named(tmp_path):
    path = write(tmp_path, "long.csv", "id,feature\n10,0\n99,1\n98,0\n99,2\n")
    table = read_node_features(path, IDS)
    assert sorted(table.extra_ids.tolist()) == [98, 99]
    assert table.num_features == 1 and len(table.rows) == 1


@pytest.mark.parametrize("name, text, says", [
    ("long.csv", "id,feature\n10,0\n12,-2\n", "has the negative feature index -2 \\(node 12\\); "
                                              "number features from 0."),
    ("long.csv", "id,feature\n10,0.5\n", "holds double values, neither integer indices nor "
                                         "names"),
    ("long.csv", "id,feature\n10,1\n10,1\n", "several rows for node 10 and feature 1; keep one "
                                             "row per node and feature."),
    ("long.csv", "id,feature,value\n10,1,x\n", "columns that are not all numbers \\(value\\)"),
    ("long.csv", "id,feature,value\n10,1,inf\n", "1 values that are NaN or infinite .*column "
                                                 "value of node 10"),
    ("lists.csv", "id,features\n10,1 2\n11,3 x\n", "holds '3 x' for node 11, which is not a "
                                                   "list of integer feature indices"),
    ("lists.csv", "id,features\n10,1 2\n10,3\n", "several rows for node 10; keep one row per "
                                                 "id."),
    ("lists.csv", "id,features\n10,1 -4\n", "negative feature index -4 \\(node 10\\)"),
    ("wide.csv", "id,a\n", "is empty; it needs a header and at least one row."),
    ("wide.csv", "id\n10\n11\n12\n13\n", "has no column besides id; add one numeric column a "
                                         "feature, or give the features as columns id, "
                                         "feature\\[, value\\] or id, features"),
])
def test_each_bad_sparse_file_gives_one_sentence_naming_it(tmp_path, name, text, says):
    path = write(tmp_path, name, text)
    with pytest.raises(PLNLPError, match=says) as error:
        read_node_features(path, IDS)
    assert str(path) in str(error.value)


def test_a_list_column_of_other_values_is_refused(tmp_path):
    path = tmp_path / "lists.parquet"
    pq.write_table(pa.table({"id": [10], "features": [[0.5, 1.5]]}), path)
    with pytest.raises(PLNLPError, match="holds list<element: double> values, not lists of integer "
                                         "feature indices"):
        read_node_features(path, IDS)


def test_a_graph_reads_sparse_features_over_its_own_ids_and_the_check_before_it_agrees(tmp_path):
    edges = write(tmp_path, "g.csv", "src,dst\n" + "".join(f"{i},{(i + 1) % 30}\n"
                                                           for i in range(30)))
    rows = "".join(f"{i},{i % 7} {(i * 3) % 11}\n" for i in range(30)) + "77,1\n"
    features = write(tmp_path, "f.csv", "id,features\n" + rows)
    checked = own_node_features(edges, features)
    assert checked.num_features == 11 and checked.extra_ids.tolist() == [77]
    split = load_own_graph(edges, features=features).split
    assert split.x.shape == (30, 11) and split.info.feature_dim == 11
    assert split.x[4].nonzero().flatten().tolist() == [1, 4]
    assert np.isclose(split.x.sum().item(), sum(1 + (i % 7 != (i * 3) % 11) for i in range(30)))
