"""The stage cache: entries reused while they verify, rebuilt when damaged,
new keys for new inputs, safe under concurrent builders; then the ``load``
and ``augment`` stages on it."""
import os
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from components.artifacts import DatasetArtifact
from components.augment import augment, augment_inputs
from components.load import load_dataset, load_inputs
from components.storage.location import Location
from components.storage.manifest import MANIFEST, content_digest, verify
from components.storage.split_meta import DatasetMeta
from components.storage.stage_cache import cache_key, cached, stage_cache_root
from plnlp_core.config import PLNLPConfig
from plnlp_core.data.datasets import DATASETS

INPUTS = {"dataset": "demo", "files": {"a.csv": [10, 123]}}


class Writer:
    """Writes a small entry (two Parquet files, one in a subfolder, and a
    text file) and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, folder: Path) -> None:
        self.calls += 1
        write_entry(folder)


def write_entry(folder: Path, barrier=None) -> None:
    pq.write_table(pa.table({"src": list(range(100)), "dst": list(range(100, 200))}),
                   folder / "train.parquet")
    if barrier is not None:  # both builders are midway before either finishes
        barrier.wait(timeout=60)
    (folder / "round-0000").mkdir()
    pq.write_table(pa.table({"src": [1, 2, 3]}), folder / "round-0000" / "part-0000.parquet")
    (folder / "meta.json").write_text('{"num_nodes": 200}')


def file_stats(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_entry_records_every_file_and_the_inputs(tmp_path, capsys):
    entry = cached(Location(tmp_path), "demo", INPUTS, Writer())
    assert entry.path == tmp_path / f"demo-{cache_key('demo', INPUTS)}"
    assert f"building demo output {entry.path}" in capsys.readouterr().out
    files = entry.manifest["files"]
    assert set(files) == {"train.parquet", "round-0000/part-0000.parquet", "meta.json"}
    assert files["train.parquet"]["rows"] == 100 and "rows" not in files["meta.json"]
    assert files["meta.json"]["size"] == (entry.path / "meta.json").stat().st_size
    assert entry.manifest["inputs"] == INPUTS and entry.parquet_rows() == 103
    assert verify(entry.path)[0] is None
    assert content_digest(entry.location) == entry.digest


def test_an_unchanged_rerun_reuses_the_entry_without_rebuilding(tmp_path, capsys):
    writer = Writer()
    first = cached(Location(tmp_path), "demo", INPUTS, writer)
    before = file_stats(first.path)
    capsys.readouterr()
    again = cached(Location(tmp_path), "demo", dict(reversed(INPUTS.items())), writer)
    assert again.path == first.path and writer.calls == 1
    assert file_stats(again.path) == before
    assert capsys.readouterr().out == f"reusing cached demo output {first.path}\n"


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-10])


def alter_one_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, reason", [
    (lambda e: truncate(e / "train.parquet"), "train.parquet is"),
    (lambda e: alter_one_byte(e / "round-0000" / "part-0000.parquet"), "sha256 differs"),
    (lambda e: (e / "meta.json").unlink(), "meta.json is missing"),
    (lambda e: (e / "extra.parquet").write_bytes(b"x"), "extra.parquet is not in its manifest"),
    (lambda e: (e / MANIFEST).write_text("{"), f"{MANIFEST} is missing or unreadable"),
    (lambda e: (e / MANIFEST).write_text("[]"), f"{MANIFEST} is missing or unreadable"),
], ids=["truncated", "altered-byte", "missing", "extra", "bad-manifest", "not-a-manifest"])
def test_a_damaged_entry_is_detected_removed_and_rebuilt(tmp_path, capsys, damage, reason):
    writer = Writer()
    first = cached(Location(tmp_path), "demo", INPUTS, writer)
    damage(first.path)
    assert verify(first.path)[0] is not None
    capsys.readouterr()
    rebuilt = cached(Location(tmp_path), "demo", INPUTS, writer)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"cached demo output {first.path} is not trusted (")
    assert reason in out[0] and out[1] == f"building demo output {first.path}"
    assert writer.calls == 2 and rebuilt.path == first.path
    assert verify(rebuilt.path)[0] is None
    assert pq.read_table(rebuilt.path / "train.parquet").num_rows == 100
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]


def test_changed_inputs_give_a_new_key(tmp_path):
    changed = {**INPUTS, "files": {"a.csv": [10, 124]}}
    assert cache_key("demo", changed) != cache_key("demo", INPUTS)
    assert cache_key("other", INPUTS) != cache_key("demo", INPUTS)
    assert cache_key("demo", INPUTS) == cache_key("demo", dict(reversed(INPUTS.items())))
    assert cached(Location(tmp_path), "demo", changed, Writer()).path != \
        cached(Location(tmp_path), "demo", INPUTS, Writer()).path


def test_a_builder_that_fails_midway_leaves_nothing(tmp_path):
    def failing(folder: Path) -> None:
        pq.write_table(pa.table({"src": [1]}), folder / "train.parquet")
        raise RuntimeError("stage failed")

    with pytest.raises(RuntimeError, match="stage failed"):
        cached(Location(tmp_path), "demo", INPUTS, failing)
    assert list(tmp_path.iterdir()) == []


def test_scratch_of_a_dead_process_is_removed_and_a_live_one_kept(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    name = f"demo-{cache_key('demo', INPUTS)}"
    host = socket.gethostname()
    left = tmp_path / f".{name}.partial-{host}-{dead.pid}-0000"
    live = tmp_path / f".{name}.partial-{host}-{os.getpid()}-0000"
    left.mkdir()
    live.mkdir()
    cached(Location(tmp_path), "demo", INPUTS, Writer())
    assert not left.exists() and live.exists()


def test_two_builders_of_one_key_both_end_with_the_valid_entry(tmp_path, capsys):
    barrier = threading.Barrier(2)
    with ThreadPoolExecutor(2) as pool:
        entries = list(pool.map(lambda _: cached(
            Location(tmp_path), "demo", INPUTS, lambda folder: write_entry(folder, barrier)),
            range(2)))
    assert entries[0].path == entries[1].path
    assert entries[0].manifest == entries[1].manifest
    assert verify(entries[0].path)[0] is None
    assert [p.name for p in tmp_path.iterdir()] == [entries[0].path.name]
    out = capsys.readouterr().out
    assert out.count("building demo output") == 2
    assert out.count("another builder finished first") == 1


def test_the_cache_lives_under_the_work_dir_else_the_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("PLNLP_CACHE_DIR", str(tmp_path / "cache"))
    assert stage_cache_root(None).local_path() == tmp_path / "cache" / "stages"
    work = Location(tmp_path / "work")
    assert stage_cache_root(work).local_path() == tmp_path / "work" / "stages"
    assert stage_cache_root(Location("s3://bucket/plnlp")).uri == "s3://bucket/plnlp/stages"


def test_load_keys_on_the_files_it_reads(standin_root):
    ddi = DATASETS.get("ddi")
    inputs = load_inputs(ddi, Location(standin_root))
    assert inputs["folder"] == str((standin_root / "ogbl_ddi").resolve())
    assert set(inputs["files"]) == {"raw/num-node-list.csv.gz", "split/target/train.pt",
                                    "split/target/valid.pt", "split/target/test.pt"}
    train_pt = standin_root / "ogbl_ddi" / "split" / "target" / "train.pt"
    stat = train_pt.stat()
    os.utime(train_pt, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert cache_key("load", load_inputs(ddi, Location(standin_root))) != cache_key("load", inputs)


def test_augment_keys_on_the_splits_and_the_walk_settings(tmp_path):
    (tmp_path / "train.bin").write_bytes(b"splits")
    dataset = DatasetArtifact(Location(tmp_path), DatasetMeta("ddi", 3, False, 0, "hits@20", 1))
    config = PLNLPConfig(walk_length=3)
    key = cache_key("augment", augment_inputs(dataset, config, 8))
    assert key == cache_key("augment", augment_inputs(dataset, config.replace(lr=0.5), 8))
    for changed in (config.replace(walk_length=4), config.replace(seed=1),
                    config.replace(walk_starts="edge_endpoints"),
                    config.replace(valid_as_input=True)):
        assert cache_key("augment", augment_inputs(dataset, changed, 8)) != key
    assert cache_key("augment", augment_inputs(dataset, config, 4)) != key
    (tmp_path / "train.bin").write_bytes(b"other splits")
    assert cache_key("augment", augment_inputs(dataset, config, 8)) != key


@pytest.mark.slow
def test_load_and_augment_reuse_their_entries_until_an_input_changes(
        ray_session, standin_root, tmp_path, capsys):
    root, data = Location(tmp_path / "stages"), Location(standin_root)
    first = ray_session.get(load_dataset.remote("ddi", data, root))
    assert first.directory.parent == root and verify(first.directory.local_path())[0] is None
    before = file_stats(first.directory.local_path())
    assert ray_session.get(load_dataset.remote("ddi", data, root)) == first
    assert file_stats(first.directory.local_path()) == before

    config = PLNLPConfig(walk_length=3, walk_rounds=2)
    walks = augment(first, config, root, num_chunks=2)
    assert walks.num_pairs == sum(pq.read_table(walks.round_directory(r)).num_rows
                                  for r in range(2)) > 0
    walked = file_stats(walks.directory.local_path())
    capsys.readouterr()
    assert augment(first, config, root, num_chunks=2) == walks
    # the driver's own lines: Ray forwards a worker's, "(load_dataset pid=...) ...", when its
    # log monitor gets to them, once seconds after the task
    printed = [line for line in capsys.readouterr().out.splitlines() if "pid=" not in line]
    assert printed == [f"reusing cached augment output {walks.directory}"]
    assert file_stats(walks.directory.local_path()) == walked
    assert augment(first, config.replace(walk_length=4), root, num_chunks=2).directory \
        != walks.directory

    train_pt = standin_root / "ogbl_ddi" / "split" / "target" / "train.pt"
    os.utime(train_pt, ns=(train_pt.stat().st_atime_ns, train_pt.stat().st_mtime_ns + 10**9))
    touched = ray_session.get(load_dataset.remote("ddi", data, root))
    assert touched.directory != first.directory and touched.meta == first.meta
    # the same splits rewritten: the walks on them are still reused
    assert augment(touched, config, root, num_chunks=2) == walks
