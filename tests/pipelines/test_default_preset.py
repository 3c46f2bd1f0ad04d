"""The preset a graph of one's own starts from: the edge level below
SAMPLED_FROM_EDGES edges, the node level with neighbour sampling from
there on, the choice printed and kept with the run's params."""
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.planning import presets
from pipelines.planning.request import RunRequest
from pipelines.planning.run_plan import plan_run
from plnlp_core.data.own_graph import count_edges


def write_edges(folder, count: int, suffix: str):
    table = pa.table({"src": [f"n{i}" for i in range(count)],
                      "dst": [f"n{(i * 7 + 1) % count}" for i in range(count)]})
    path = folder / f"edges{suffix}"
    if suffix == ".csv":
        path.write_text("src,dst\n" + "\n".join(f"n{i},n{(i * 7 + 1) % count}"
                                                 for i in range(count)))  # no last newline
    else:
        pq.write_table(table, path)
    return path


def test_edges_are_counted_from_a_parquet_footer_and_a_csv_s_lines(tmp_path):
    assert count_edges(write_edges(tmp_path, 1234, ".parquet")) == 1234
    assert count_edges(write_edges(tmp_path, 1234, ".csv")) == 1234
    (tmp_path / "empty.csv").write_text("src,dst\n")
    assert count_edges(tmp_path / "empty.csv") == 0


def test_a_large_own_graph_starts_sampled_and_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(presets, "SAMPLED_FROM_EDGES", 500)
    large = plan_run(RunRequest(dataset=str(write_edges(tmp_path, 800, ".parquet"))))
    assert large.preset == "sampled" and large.config.fanouts == (15, 10)
    assert large.config.encoder_level == "node"
    printed = capsys.readouterr().out
    assert "preset sampled: the graph has 800 edges, at least 500" in printed
    assert large.params()["preset_choice"] in printed
    small = plan_run(RunRequest(dataset=str(write_edges(tmp_path, 300, ".csv"))))
    assert small.preset == "default" and small.config.encoder_level == "edge"
    assert "300 edges, fewer than 500" in small.params()["preset_choice"]
    chosen = plan_run(RunRequest(dataset=str(tmp_path / "edges.parquet"), preset="node"))
    assert chosen.preset == "node" and "preset_choice" not in chosen.params()
    assert "preset_choice" not in plan_run(RunRequest(dataset="ddi", yes=True)).params()
