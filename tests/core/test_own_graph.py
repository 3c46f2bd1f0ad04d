"""Own graphs: an edge list or a split folder read into a LinkSplit, with
its ids mapped, cleaned, split and given evaluation negatives, and every bad
input refused with one sentence that names the file."""
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from plnlp_core.data.own_graph import load_own_graph, parse_split
from plnlp_core.edge_set import EdgeSet
from plnlp_core.errors import PLNLPError


def write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def random_edges(num_nodes: int = 40, num_edges: int = 300, seed: int = 0) -> pd.DataFrame:
    """Random edges over ids ``10 * i`` (not 0..n-1), with weights and times;
    the node set is every id that appears."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"src": rng.integers(num_nodes, size=num_edges) * 10,
                         "dst": rng.integers(num_nodes, size=num_edges) * 10,
                         "weight": rng.random(num_edges),
                         "time": rng.integers(0, 50, size=num_edges)})


def original(graph, pairs: torch.Tensor) -> set[tuple]:
    """``pairs`` in the user's ids, each as a sorted tuple (undirected)."""
    ids = np.asarray(graph.node_ids.column("id").to_pylist(), dtype=object)
    assert graph.node_ids.column("index").to_pylist() == list(range(len(ids)))
    return {tuple(sorted(ids[p])) for p in pairs.numpy()}


def all_pairs(split) -> torch.Tensor:
    return torch.cat([split.train_pos, split.valid_pos, split.test_pos])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_an_edge_list_round_trips_through_the_id_mapping(tmp_path, suffix):
    frame = random_edges()
    graph = load_own_graph(write(frame, tmp_path / f"edges{suffix}"))
    split = graph.split
    ids = graph.node_ids.column("id").to_pylist()
    assert ids == sorted(set(frame.src) | set(frame.dst))
    expected = {tuple(sorted(e)) for e in zip(frame.src, frame.dst, strict=True) if e[0] != e[1]}
    assert original(graph, all_pairs(split)) == expected
    assert split.num_nodes == len(ids)
    assert split.info.name == "edges" and split.info.metric == "auc"
    assert split.info.edge_weights and split.train_weight.dtype == torch.float32
    loops = int((frame.src == frame.dst).sum())
    assert graph.report.self_loops == loops
    assert graph.report.duplicates == len(frame) - loops - len(expected)
    assert graph.report.num_edges == len(expected) == all_pairs(split).size(0)


def test_duplicates_keep_the_first_row_and_reversed_pairs_are_one_undirected_edge(tmp_path):
    frame = pd.DataFrame({"src": [1, 2, 1, 3, 3] + list(range(10, 30)),
                          "dst": [2, 1, 2, 3, 4] + list(range(11, 31)),
                          "weight": [5.0, 6.0, 7.0, 1.0, 1.0] + [1.0] * 20})
    graph = load_own_graph(write(frame, tmp_path / "e.csv"))
    assert (graph.report.self_loops, graph.report.duplicates) == (1, 2)
    split = graph.split
    pairs = all_pairs(split)
    weights = torch.cat([split.train_weight, split.valid_weight,
                         torch.ones(split.test_pos.size(0))])
    one_two = (pairs.sort(dim=1).values == torch.tensor([0, 1])).all(1)
    assert weights[one_two].tolist() == [5.0]
    directed = load_own_graph(tmp_path / "e.csv", directed=True)
    assert (directed.report.self_loops, directed.report.duplicates) == (1, 1)
    assert directed.split.info.directed


def test_string_ids_are_mapped_in_sorted_order(tmp_path):
    names = [f"protein-{i}" for i in range(30)]
    frame = pd.DataFrame({"src": names, "dst": names[1:] + names[:1]})
    graph = load_own_graph(write(frame, tmp_path / "ring.parquet"))
    assert graph.node_ids.column("id").to_pylist() == sorted(names)
    assert original(graph, all_pairs(graph.split)) == {
        tuple(sorted(e)) for e in zip(frame.src, frame.dst, strict=True)}


def test_mixed_integer_and_string_ids_become_strings(tmp_path):
    frame = pd.DataFrame({"src": list(range(20)), "dst": [f"x{i}" for i in range(20)]})
    graph = load_own_graph(write(frame, tmp_path / "e.csv"))
    assert graph.node_ids.column("id").type == "string"
    assert graph.split.num_nodes == 40


def test_a_random_split_has_the_fractions_and_depends_only_on_the_seed(tmp_path):
    path = write(random_edges(num_nodes=100, num_edges=1000), tmp_path / "e.csv")
    first, again = (load_own_graph(path, "random:0.8,0.1,0.1", seed=3) for _ in range(2))
    other = load_own_graph(path, "random:0.8,0.1,0.1", seed=4)
    edges = first.report.num_edges
    assert first.split.valid_pos.size(0) == round(0.1 * edges)
    assert first.split.test_pos.size(0) == round(0.1 * edges)
    for name in ("train_pos", "valid_pos", "valid_neg", "test_pos", "test_neg"):
        assert torch.equal(getattr(first.split, name), getattr(again.split, name))
    assert not torch.equal(first.split.test_pos, other.split.test_pos)


@pytest.mark.parametrize("dates", [False, True])
def test_a_time_split_never_puts_a_later_edge_in_train_than_in_test(tmp_path, dates):
    frame = random_edges(num_nodes=60, num_edges=600)
    if dates:
        frame["time"] = (pd.Timestamp("2020-01-01") + pd.to_timedelta(frame.time, "D")).astype(str)
    graph = load_own_graph(write(frame, tmp_path / "e.csv"), "time:0.7,0.15,0.15")
    times = {}
    for s, d, t in zip(frame.src, frame.dst, pd.to_datetime(frame.time) if dates else frame.time,
                       strict=True):
        times.setdefault(tuple(sorted((s, d))), t)  # the first row of an edge is kept
    train, valid, test = ([times[e] for e in original(graph, getattr(graph.split, name))]
                          for name in ("train_pos", "valid_pos", "test_pos"))
    assert max(train) <= min(valid) and max(valid) <= min(test)
    assert max(train) < max(test)


@pytest.mark.parametrize("directed", [False, True])
def test_negatives_are_never_edges_of_the_whole_graph_nor_self_loops(tmp_path, directed):
    # a dense graph, so that a careless draw would often hit an edge
    path = write(random_edges(num_nodes=25, num_edges=400), tmp_path / "e.csv")
    split = load_own_graph(path, directed=directed, seed=1).split
    negatives = torch.cat([split.valid_neg, split.test_neg])
    assert negatives.size(0) == split.valid_pos.size(0) + split.test_pos.size(0)
    known = EdgeSet(all_pairs(split), split.num_nodes, undirected=not directed)
    assert not known.contains(negatives).any()
    assert (negatives[:, 0] != negatives[:, 1]).all()


def test_nodes_only_in_valid_or_test_are_kept_and_counted(tmp_path):
    # a star plus one pendant edge per leaf: a leaf's pendant is held out now and then
    frame = pd.DataFrame({"src": [0] * 30 + list(range(1, 31)),
                          "dst": list(range(1, 31)) + list(range(101, 131))})
    graph = load_own_graph(write(frame, tmp_path / "e.csv"), "random:0.5,0.25,0.25")
    split = graph.split
    trained = torch.zeros(split.num_nodes, dtype=torch.bool)
    trained[split.train_pos.reshape(-1)] = True
    for part in ("valid", "test"):
        nodes = torch.cat([getattr(split, f"{part}_pos"), getattr(split, f"{part}_neg")]).unique()
        assert getattr(graph.report, f"{part}_cold_nodes") == int((~trained[nodes]).sum()) > 0
    assert split.num_nodes == 61


def split_folder(tmp_path: Path, train_suffix: str = ".csv") -> Path:
    folder = tmp_path / "my-split"
    folder.mkdir()
    write(pd.DataFrame({"src": ["a", "b", "c", "c"], "dst": ["b", "c", "d", "c"],
                        "weight": [1.0, 2.0, 3.0, 4.0]}), folder / f"train{train_suffix}")
    write(pd.DataFrame({"src": ["a", "b"], "dst": ["c", "e"], "label": [1, 0],
                        "weight": [2.5, None]}), folder / "valid.parquet")
    write(pd.DataFrame({"src": ["d", "a", "e"], "dst": ["a", "d", "b"], "label": [1, 0, 0]}),
          folder / "test.csv")
    return folder


@pytest.mark.parametrize("train_suffix", [".csv", ".parquet"])
def test_a_split_folder_keeps_its_exact_pairs(tmp_path, train_suffix):
    graph = load_own_graph(split_folder(tmp_path, train_suffix))
    split = graph.split
    assert graph.node_ids.column("id").to_pylist() == ["a", "b", "c", "d", "e"]
    assert split.info.name == "my-split" and split.info.edge_weights
    assert split.train_pos.tolist() == [[0, 1], [1, 2], [2, 3]]  # the self-loop dropped
    assert split.train_weight.tolist() == [1.0, 2.0, 3.0]
    assert split.valid_pos.tolist() == [[0, 2]] and split.valid_neg.tolist() == [[1, 4]]
    assert split.valid_weight.tolist() == [2.5]
    assert split.test_pos.tolist() == [[3, 0]]
    assert split.test_neg.tolist() == [[0, 3], [4, 1]]
    assert graph.report.self_loops == 1
    assert (graph.report.valid_cold_nodes, graph.report.test_cold_nodes) == (1, 1)  # e


def test_node_features_follow_the_id_mapping_and_extra_ids_are_counted(tmp_path):
    folder = split_folder(tmp_path)
    ids = ["e", "d", "c", "b", "a", "z"]
    write(pd.DataFrame({"id": ids, "f0": range(6), "f1": [0.5] * 6}), tmp_path / "x.parquet")
    graph = load_own_graph(folder, features=tmp_path / "x.parquet")
    assert graph.split.x.tolist() == [[4, 0.5], [3, 0.5], [2, 0.5], [1, 0.5], [0, 0.5]]
    assert graph.split.info.feature_dim == 2
    assert graph.report.extra_feature_ids == 1


def test_parse_split_reads_the_kind_and_the_fractions():
    assert parse_split("time:0.7,0.2,0.1") == ("time", (0.7, 0.2, 0.1))


def bad_edge_lists() -> dict[str, tuple[str, pd.DataFrame | None, dict]]:
    """Name: (what the error says, the file's rows or None, load options)."""
    good = random_edges()
    return {
        "no dst": ("has no column dst", good.rename(columns={"dst": "target"}), {}),
        "empty": ("is empty", good.iloc[:0], {}),
        "one edge": ("has 1 edge(s)", good.iloc[:1].assign(src=1, dst=2), {}),
        "too few for the split": ("too few", good.iloc[:4], {}),
        "text weight": ("weight column", good.assign(weight="heavy"), {}),
        "negative weight": ("weight column", good.assign(weight=-1.0), {}),
        "no time": ("needs a time column", good.drop(columns="time"),
                    {"split": "time:0.8,0.1,0.1"}),
        "bad time": ("time column", good.assign(time="yesterday"),
                     {"split": "time:0.8,0.1,0.1"}),
        "bad split": ("does not parse", good, {"split": "random:0.8,0.2"}),
        "bad kind": ("does not parse", good, {"split": "degree:0.8,0.1,0.1"}),
        "negative fraction": ("positive fractions", good, {"split": "random:1.1,-0.2,0.1"}),
        "fractions over 1": ("sum to 1", good, {"split": "random:0.8,0.2,0.1"}),
        "empty id": ("empty cells", good.assign(src=[None] + list(good.src[1:])), {}),
        "complete graph": ("no non-edge", pd.DataFrame(
            {"src": [s for s in range(5) for d in range(5) if s < d],
             "dst": [d for s in range(5) for d in range(5) if s < d]}), {}),
    }


@pytest.mark.parametrize("case", list(bad_edge_lists()))
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_each_bad_edge_list_gives_one_sentence_naming_the_file(tmp_path, case, suffix):
    says, frame, options = bad_edge_lists()[case]
    path = write(frame, tmp_path / f"e{suffix}")
    with pytest.raises(PLNLPError, match=re.escape(says)) as error:
        load_own_graph(path, **options)
    assert str(error.value).endswith(".") and "\n" not in str(error.value)
    if "split" not in options or case in ("no time", "bad time"):
        assert str(path) in str(error.value)


@pytest.mark.parametrize("name, says", [("missing.csv", "does not exist"),
                                         ("edges.tsv", "neither .csv nor .parquet"),
                                         ("zero.csv", "is empty"),
                                         ("garbled.parquet", "could not be read")])
def test_unreadable_files_name_themselves(tmp_path, name, says):
    path = tmp_path / name
    if name != "missing.csv":
        path.write_bytes(b"" if name == "zero.csv" else b"src,dst\n1,2\n")
    with pytest.raises(PLNLPError, match=says) as error:
        load_own_graph(path)
    assert str(path) in str(error.value)


@pytest.mark.parametrize("change, says", [
    (lambda f: (f / "test.csv").unlink(), "has 0 test files"),
    (lambda f: write(pd.DataFrame({"src": [1], "dst": [2]}), f / "test.parquet"),
     "has 2 test files"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["b"], "label": [0]}), f / "train.csv"),
     "rows labelled 0"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["b"], "label": [2]}),
                     f / "valid.parquet"), "values other than 0 and 1"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["b"], "label": ["yes"]}),
                     f / "valid.parquet"), "values other than 0 and 1"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["b"], "label": [1]}),
                     f / "valid.parquet"), "one negative"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["b"]}), f / "test.csv"),
     "no column label"),
    (lambda f: write(pd.DataFrame({"src": ["a"], "dst": ["a"]}), f / "train.csv"),
     "only self-loops"),
])
def test_each_bad_split_folder_gives_one_sentence(tmp_path, change, says):
    folder = split_folder(tmp_path)
    change(folder)
    with pytest.raises(PLNLPError, match=says) as error:
        load_own_graph(folder)
    assert str(folder) in str(error.value)


@pytest.mark.parametrize("frame, says", [
    (pd.DataFrame({"node": list("abcde"), "f": range(5)}), "has no column id"),
    (pd.DataFrame({"id": list("abcde")}), "no column besides id"),
    (pd.DataFrame({"id": list("abcde"), "f": list("vwxyz")}), "not all numbers"),
    (pd.DataFrame({"id": list("abcd"), "f": range(4)}), "no row for 1 of the graph's 5"),
    (pd.DataFrame({"id": list("abcdea"), "f": range(6)}), "several rows"),
    (pd.DataFrame({"id": list("abcde"), "f": [0.0, 1, 2, 3, 4], "g": [1, 1, float("inf"), 1, 1]}),
     "1 values that are NaN or infinite .*column g of node c"),
    (pd.DataFrame({"id": list("vwxyz"), "f": range(5)}), "no row for 5 of the graph's 5"),
])
def test_each_bad_feature_file_gives_one_sentence(tmp_path, frame, says):
    path = write(frame, tmp_path / "x.csv")
    with pytest.raises(PLNLPError, match=says) as error:
        load_own_graph(split_folder(tmp_path), features=path)
    assert str(path) in str(error.value)


def test_a_nan_feature_is_refused_naming_its_node_and_column(tmp_path):
    """A Parquet float column may hold NaN, which is no empty cell (a CSV's
    ``nan`` is read as one, and refused as such): every score would be NaN."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"id": list("abcde"), "f": pa.array([0, float("nan"), 2, 3, 4]),
                             "g": pa.array([1.0] * 5)}), path)
    with pytest.raises(PLNLPError, match="holds 1 values that are NaN or infinite .*column f "
                                         "of node b") as error:
        load_own_graph(split_folder(tmp_path), features=path)
    assert str(path) in str(error.value)


def test_hits_cut_offs_are_configurable_and_checked(tmp_path):
    path = write(random_edges(), tmp_path / "e.csv")
    assert load_own_graph(path, hits_k=(1, 10)).split.info.hits_k == (1, 10)
    with pytest.raises(PLNLPError, match="positive integers"):
        load_own_graph(path, hits_k=(0,))


def test_hits_at_k_is_left_out_where_the_negatives_cannot_tell_and_the_report_says_why(tmp_path):
    """300 random rows split 85/5/10 (12 valid negatives once duplicates are
    dropped): only Hits@5 and Hits@10 rank against more negatives than K."""
    graph = load_own_graph(write(random_edges(), tmp_path / "edges.csv"), hits_k=(5, 10, 20, 50))
    negatives = min(graph.split.valid_neg.size(0), graph.split.test_neg.size(0))
    assert graph.report.negatives == negatives and 10 < negatives < 20
    assert graph.split.info.hits_k == (5, 10)
    assert graph.report.hits_left_out == [20, 50]
    assert f"Hits@20, Hits@50 left out: valid or test ranks each positive against {negatives} " \
           "negatives" in str(graph.report)
    everything = load_own_graph(tmp_path / "edges.csv", hits_k=(5, 10))
    assert everything.split.info.hits_k == (5, 10) and "left out" not in str(everything.report)
