"""Object storage as the work folder: the stage cache's entries in a bucket
are published manifest last, trusted only when whole, copied to a node
checked by sha256, and two builders of one key do not spoil each other;
a store that cannot be used is refused in one sentence naming its URI."""
import json
import os
import pickle
import threading
import time

import pytest

from components.storage import location as storage
from components.storage.location import Location, check_listable, check_writable, local_copy
from components.storage.manifest import MANIFEST
from components.storage.stage_cache import cached, local_entry, lookup
from components.storage.store_retries import (
    PATIENCE_ENV,
    PatientS3FileSystem,
    retry_attempts,
    waited_for,
)
from plnlp_core.errors import PLNLPError
from plnlp_testing.object_store import bucket_keys, make_bucket, s3_env, s3_server
from plnlp_testing.proxy import PausableProxy

INPUTS = {"dataset": "demo", "files": {"a": [1, 2]}}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A moto S3 server with the environment pointing at it; its URL."""
    with s3_server(tmp_path_factory.mktemp("s3")) as endpoint, pytest.MonkeyPatch.context() as mp:
        for key, value in s3_env(endpoint).items():
            mp.setenv(key, value)
        storage._root_filesystem.cache_clear()
        yield endpoint
    storage._root_filesystem.cache_clear()


@pytest.fixture
def bucket(s3, request):
    name = request.node.name.replace("_", "-")[:50].strip("-").lower()
    return make_bucket(s3, name)


def write_demo(scratch):
    (scratch / "meta.json").write_text(json.dumps({"n": 3}))
    (scratch / "part").mkdir()
    (scratch / "part" / "data.bin").write_bytes(b"x" * 1000)


def test_an_entry_in_a_bucket_is_built_once_then_reused(bucket, capsys):
    first = cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    again = cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    out = capsys.readouterr().out
    assert out.count("building demo output s3://") == 1
    assert f"reusing cached demo output {first.location.uri}" in out
    assert again.manifest == first.manifest
    assert json.loads(first.read_text("meta.json")) == {"n": 3}


def test_the_manifest_is_written_after_every_file_it_names(bucket, monkeypatch):
    order = []
    real_upload, real_write = storage.Location.upload, storage.Location.write_text
    monkeypatch.setattr(storage.Location, "upload", lambda self, *a: (
        order.append("files"), real_upload(self, *a))[1])
    monkeypatch.setattr(storage.Location, "write_text", lambda self, text: (
        order.append(self.name), real_write(self, text))[1])
    cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    assert order == ["files", MANIFEST]


def test_a_failed_build_leaves_nothing_a_later_run_would_trust(bucket):
    def failing(scratch):
        write_demo(scratch)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        cached(Location(f"{bucket}/stages"), "demo", INPUTS, failing)
    assert not any(key.endswith(MANIFEST) for key in bucket_keys_of(bucket))
    assert lookup(Location(f"{bucket}/stages"), "demo", INPUTS) is None


def test_an_entry_whose_files_differ_from_its_manifest_is_not_trusted(bucket, capsys):
    entry = cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    shortened = entry.location / entry.manifest["files_in"] / "part" / "data.bin"
    with shortened.filesystem.open_output_stream(shortened.path) as stream:
        stream.write(b"x" * 10)
    assert lookup(Location(f"{bucket}/stages"), "demo", INPUTS) is None
    assert "is not trusted (part/data.bin is 10 bytes, not 1000)" in capsys.readouterr().out
    assert bucket_keys_of(bucket) == []


def test_a_node_copies_an_entry_once_checking_every_sha256(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("PLNLP_SCRATCH_DIR", str(tmp_path / "scratch"))
    entry = cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    copy = local_entry(entry.location)
    assert (copy / "part" / "data.bin").read_bytes() == b"x" * 1000
    assert local_entry(entry.location) == copy
    assert copy.is_relative_to(tmp_path / "scratch")


def test_a_copy_whose_contents_differ_is_refused(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("PLNLP_SCRATCH_DIR", str(tmp_path / "scratch"))
    entry = cached(Location(f"{bucket}/stages"), "demo", INPUTS, write_demo)
    tampered = entry.location / entry.manifest["files_in"] / "part" / "data.bin"
    with tampered.filesystem.open_output_stream(tampered.path) as stream:
        stream.write(b"y" * 1000)  # same size, other bytes
    with pytest.raises(PLNLPError, match="could not be copied to this node .*sha256"):
        local_entry(entry.location)
    assert not any((tmp_path / "scratch" / "entries").glob("demo-*"))


def test_two_builders_of_one_key_leave_one_whole_entry(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("PLNLP_SCRATCH_DIR", str(tmp_path / "scratch"))
    both_writing = threading.Barrier(2)

    def write(scratch):
        write_demo(scratch)
        both_writing.wait(timeout=30)

    entries = []
    builders = [threading.Thread(target=lambda: entries.append(
        cached(Location(f"{bucket}/stages"), "demo", INPUTS, write))) for _ in range(2)]
    for builder in builders:
        builder.start()
    for builder in builders:
        builder.join()
    kept = lookup(Location(f"{bucket}/stages"), "demo", INPUTS)
    assert kept is not None and len(entries) == 2
    assert {entry.location for entry in entries} == {kept.location}
    attempts = {key.split("/")[2] for key in bucket_keys_of(bucket) if "attempt-" in key}
    assert kept.manifest["files_in"] in attempts
    assert lookup(Location(f"{bucket}/stages"), "demo", INPUTS).manifest == kept.manifest
    assert (local_entry(kept.location) / "part" / "data.bin").read_bytes() == b"x" * 1000


def test_a_folder_in_a_bucket_is_copied_for_a_block_and_removed_after(bucket):
    folder = Location(f"{bucket}/checkpoint")
    (folder / "best.json").write_text("{}")
    with local_copy(folder) as local:
        assert (local / "best.json").read_text() == "{}"
    assert not local.exists()


def test_a_folder_uploaded_into_a_bucket_has_every_file_whole(bucket, tmp_path):
    local = tmp_path / "checkpoint"
    (local / "best").mkdir(parents=True)
    (local / "model.pt").write_bytes(bytes(range(256)) * 40_000)  # past one 8 MiB chunk
    (local / "best" / "best.json").write_text("{}")
    folder = Location(f"{bucket}/uploaded")
    folder.upload(local)
    assert {name: info.size for name, info in folder.files().items()} == {
        "model.pt": 10_240_000, "best/best.json": 2}
    assert (folder / "model.pt").read_bytes() == (local / "model.pt").read_bytes()


def test_an_upload_the_store_does_not_take_raises(s3, monkeypatch, tmp_path):
    """With the store away past its patience, the upload raises, rather than
    leaving it to a later write to find out."""
    proxy = PausableProxy(s3)
    proxy.up()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    monkeypatch.setenv(PATIENCE_ENV, "1")
    storage._root_filesystem.cache_clear()
    try:
        make_bucket(s3, "upload-outage")
        folder = Location("s3://upload-outage/checkpoint")
        (folder / "before.txt").write_text("before")
        (tmp_path / "timing.json").write_text("{}")
        proxy.down()
        with pytest.raises(OSError, match="NETWORK_CONNECTION"):
            folder.upload(tmp_path)
    finally:
        proxy.up()
        storage._root_filesystem.cache_clear()


def test_a_bucket_that_does_not_exist_is_refused_naming_its_uri(s3):
    with pytest.raises(PLNLPError) as refused:
        check_writable(Location("s3://no-such-bucket/plnlp"), "--work-dir")
    assert str(refused.value).startswith(
        "--work-dir s3://no-such-bucket/plnlp cannot be written: the bucket does not exist;")


@pytest.mark.slow  # waits out the patience (6 s)
def test_an_endpoint_that_does_not_answer_is_refused_naming_its_uri_and_the_endpoint(
        s3, monkeypatch):
    from plnlp_testing.processes import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    storage._root_filesystem.cache_clear()
    try:
        with pytest.raises(PLNLPError) as refused:
            check_listable(Location("s3://any/ogb"), "--data-root")
        assert str(refused.value).startswith(
            f"--data-root s3://any/ogb cannot be read: the store does not answer "
            f"(AWS_ENDPOINT_URL={endpoint}); check")
    finally:
        storage._root_filesystem.cache_clear()


@pytest.mark.slow  # waits out a 3 s outage
def test_a_store_that_stops_answering_for_a_while_is_waited_for(s3, monkeypatch):
    """The store's endpoint refuses connections for 3 s while a file is
    written: the write is retried and goes through; with a patience of 1 s
    (``PLNLP_STORE_PATIENCE_S``) an outage past it fails the write, within
    twice the patience. pyarrow's own 3 tries would have failed at once."""
    proxy = PausableProxy(s3)
    proxy.up()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    storage._root_filesystem.cache_clear()
    try:
        make_bucket(s3, "outage")
        target = Location("s3://outage/entry.txt")
        target.write_text("before")
        proxy.down()
        threading.Timer(3, proxy.up).start()
        started = time.monotonic()
        target.write_text("during")
        assert time.monotonic() - started >= 2.5  # waited for the store, not refused
        assert target.read_text() == "during"
        monkeypatch.setenv(PATIENCE_ENV, "1")
        storage._root_filesystem.cache_clear()
        target.read_text()  # the file system of this patience, made while the store answers
        proxy.down()
        started = time.monotonic()
        with pytest.raises(OSError, match="NETWORK_CONNECTION"):
            target.write_text("after")
        assert 1 <= time.monotonic() - started <= 4
    finally:
        storage._root_filesystem.cache_clear()


@pytest.mark.slow  # waits out a 3 s outage
def test_ray_storage_in_a_bucket_keeps_its_patience_in_the_process_it_is_pickled_into(
        s3, monkeypatch):
    """Ray Train and Tune get a bucket's folder as a path and the product's
    file system, which reaches their workers pickled: the copy waits out a
    3 s outage as the original does (pyarrow's own drops its retries when
    pickled). A local folder is left to Ray."""
    proxy = PausableProxy(s3)
    proxy.up()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    storage._root_filesystem.cache_clear()
    try:
        make_bucket(s3, "pickled")
        path, filesystem = Location("s3://pickled/state").ray_storage()
        copy = pickle.loads(pickle.dumps(filesystem))
        assert path == "pickled/state" and isinstance(copy, PatientS3FileSystem)
        proxy.down()
        threading.Timer(3, proxy.up).start()
        started = time.monotonic()
        with copy.open_output_stream(f"{path}/experiment_state.json") as stream:
            stream.write(b"{}")
        assert time.monotonic() - started >= 2.5
        assert Location("s3://pickled/state/experiment_state.json").read_text() == "{}"
    finally:
        storage._root_filesystem.cache_clear()
    assert Location("/tmp/state").ray_storage() == ("/tmp/state", None)


def test_what_pyarrow_asks_before_it_has_a_file_system_is_asked_again_within_the_patience(
        monkeypatch):
    """pyarrow finds an AWS bucket's region with a request of its own, before
    there is a file system to retry with (``waited_for`` around
    ``FileSystem.from_uri``): a store that does not answer it is asked again
    until it does, within the patience; past the patience, or for any other
    error, the error is raised."""
    calls = []

    def region_lookup(failures: int, error: str = "AWS Error NETWORK_CONNECTION"):
        calls.append(time.monotonic())
        if len(calls) <= failures:
            raise OSError(f"When resolving region for bucket 'b': {error}")
        return "us-east-1"

    assert waited_for(lambda: region_lookup(3)) == "us-east-1" and len(calls) == 4
    calls.clear()
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        waited_for(lambda: region_lookup(3, "AWS Error ACCESS_DENIED"))
    assert len(calls) == 1
    monkeypatch.setenv(PATIENCE_ENV, "0.5")
    calls.clear()
    with pytest.raises(OSError, match="NETWORK_CONNECTION"):
        waited_for(lambda: region_lookup(10 ** 6))
    assert 0.5 <= calls[-1] - calls[0] < 1.5 and len(calls) >= 5  # doubling from 25 ms


def test_the_retries_reach_the_patience_and_never_fewer_than_pyarrows():
    waits = {patience: 0.025 * 2 ** retry_attempts(patience) for patience in (1, 30, 120, 600)}
    assert all(patience <= wait <= 2 * patience for patience, wait in waits.items()), waits
    assert retry_attempts(0) == 3


def bucket_keys_of(bucket: str) -> list[str]:
    """The bucket's objects but the empty folder markers pyarrow leaves."""
    keys = bucket_keys(os.environ["AWS_ENDPOINT_URL"], bucket.removeprefix("s3://"))
    return [key for key in keys if not key.endswith("/")]


def test_s3_env_names_the_endpoint():
    assert s3_env("http://127.0.0.1:1")["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1"
