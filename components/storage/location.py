"""Where a run's files live: a local folder, or a folder in object storage
(``s3://``, ``gs://``, ``abfs://``, ... whatever :mod:`pyarrow.fs` resolves).

One storage layer, :mod:`pyarrow.fs`, serves the stage cache, Ray Train's and
Tune's storage, the checkpoints and the final files. It is what Ray Train and
Tune resolve ``storage_path`` with themselves, it ships with pyarrow (which
reads and writes the Parquet splits), and it reads credentials and endpoints
from the environment as the providers' SDKs do (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_ACCOUNT_KEY``, ...), so the
same URI works in every process of a cluster whose environment holds them.

A :class:`Location` is only its URI: it pickles into Ray tasks and resolves
its file system in the process that uses it. Object stores have no atomic
rename; writers here upload whole objects (each ``PUT`` is atomic) and name
what is complete last (see :mod:`components.storage.stage_cache`).
"""
import contextvars
import functools
import getpass
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from components.storage.store_retries import (
    patient_s3,
    s3_endpoint,
    store_did_not_answer,
    waited_for,
)
from plnlp_core.data.publishing import written_file
from plnlp_core.errors import PLNLPError

UPLOAD_CHUNK_BYTES = 8 * 2**20
"""Bytes read and written at a time by :meth:`Location.upload`."""


@dataclass(frozen=True)
class Location:
    """A folder or file, local or in object storage: only its URI, so it
    pickles into Ray tasks and workers, hashes and compares by it, and
    resolves its file system in the process that uses it. Made once, where
    a user's text or a local path comes in; written as :attr:`uri` wherever
    JSON holds it.

    Args:
        uri (str): A URI with a scheme (``s3://bucket/prefix``), or a local
            path (made absolute; a ``file://`` URI as its path).
    """

    uri: str

    def __post_init__(self) -> None:
        text = os.fspath(self.uri)
        if text.startswith("file://"):
            text = urlsplit(text).path
        object.__setattr__(self, "uri", text.rstrip("/") if is_uri(text)
                           else str(Path(text).resolve()))

    @property
    def is_local(self) -> bool:
        return not is_uri(self.uri)

    @property
    def name(self) -> str:
        return self.uri.rsplit("/", 1)[-1]

    @property
    def parent(self) -> "Location":
        return Location(self.uri.rsplit("/", 1)[0])

    @property
    def filesystem(self) -> pafs.FileSystem:
        return _resolve(self.uri)[0]

    @property
    def path(self) -> str:
        """The path inside :attr:`filesystem` (``bucket/prefix`` in a store)."""
        return _resolve(self.uri)[1]

    def ray_storage(self) -> tuple[str, pafs.FileSystem | None]:
        """This folder as Ray Train and Tune take it: a path and the file
        system it is in (``storage_path`` and ``storage_filesystem``). In
        object storage, its path in this product's own file system, patient
        with a store that stops answering
        (:mod:`components.storage.store_retries`); a local folder as itself,
        its file system left to Ray."""
        return (self.uri, None) if self.is_local else (self.path, self.filesystem)

    def __truediv__(self, name: str) -> "Location":
        return Location(f"{self.uri}/{name}")

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"Location({self.uri!r})"

    def local_path(self) -> Path:
        """This location as a local path; refused for object storage."""
        if not self.is_local:
            raise ValueError(f"{self.uri} is not a local path")
        return Path(self.uri)

    def relative(self, path: str) -> "Location":
        """The location of ``path``, a path of :attr:`filesystem` under this one."""
        inner = path.rstrip("/")[len(self.path.rstrip("/")):].strip("/")
        return self / inner if inner else self

    def exists(self) -> bool:
        return self.filesystem.get_file_info(self.path).type != pafs.FileType.NotFound

    def read_bytes(self) -> bytes:
        with self.filesystem.open_input_stream(self.path) as stream:
            return stream.read()

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def write_text(self, text: str) -> None:
        """Writes the file whole: in object storage one ``PUT``; locally a
        scratch file renamed into place."""
        if self.is_local:
            path = self.local_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            with written_file(path) as scratch:
                scratch.write_text(text)
            return
        with self.filesystem.open_output_stream(self.path) as stream:
            stream.write(text.encode())

    def files(self) -> dict[str, pafs.FileInfo]:
        """Every file under this folder, by its path relative to it."""
        selector = pafs.FileSelector(self.path, recursive=True, allow_not_found=True)
        base = self.path.rstrip("/") + "/"
        return {info.path[len(base):]: info for info in self.filesystem.get_file_info(selector)
                if info.type == pafs.FileType.File}

    def upload(self, local: Path) -> None:
        """Copies every file under the local folder ``local`` into this folder,
        each closed before the next, so that a write the store did not take
        raises here: pyarrow's ``copy_files`` was seen to let an upload fail
        with only "Error ignored when destroying file" on the console."""
        if self.is_local:
            shutil.copytree(local, self.local_path(), dirs_exist_ok=True)
            return
        for name in _relative_files(local):
            with (local / name).open("rb") as source, \
                    self.filesystem.open_output_stream(f"{self.path}/{name}") as target:
                shutil.copyfileobj(source, target, UPLOAD_CHUNK_BYTES)

    def download(self, local: Path) -> None:
        """Copies every file under this folder into the local folder ``local``."""
        local.mkdir(parents=True, exist_ok=True)
        pafs.copy_files(self.path, str(local), source_filesystem=self.filesystem,
                        destination_filesystem=pafs.LocalFileSystem(), use_threads=True)

    def remove(self) -> None:
        """Removes this folder and everything under it, if it exists."""
        if self.is_local:
            shutil.rmtree(self.uri, ignore_errors=True)
            return
        if self.exists():
            self.filesystem.delete_dir(self.path)


def is_uri(text: str) -> bool:
    """Whether ``text`` names object storage (a scheme other than ``file``)."""
    scheme = urlsplit(str(text)).scheme
    return len(scheme) > 1 and scheme != "file"


@contextmanager
def local_copy(folder: Location) -> Iterator[Path]:
    """The folder as a local path for the block: itself when local, else a
    temporary download removed afterwards."""
    if folder.is_local:
        yield folder.local_path()
        return
    with tempfile.TemporaryDirectory(prefix="plnlp-", dir=node_scratch_dir()) as scratch:
        copy = Path(scratch) / folder.name  # the same name as the original
        folder.download(copy)
        yield copy


def node_scratch_dir() -> Path:
    """This node's scratch folder for copies of what object storage holds:
    ``$PLNLP_SCRATCH_DIR``, else ``<temp>/plnlp-<user>``; never the cache
    folder or the home folder, which stay as they were."""
    root = Path(os.environ.get("PLNLP_SCRATCH_DIR")
                or Path(tempfile.gettempdir()) / f"plnlp-{_user()}")
    root.mkdir(parents=True, exist_ok=True)
    return root


def check_writable(folder: Location, flag: str) -> None:
    """Writes, reads and removes a probe under ``folder``; refuses, in one
    sentence naming the URI, a store that does not answer, a bucket that
    does not exist or keys it does not take."""
    if folder.is_local:
        return
    probe = folder / f".plnlp-probe-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        with _without_patience():
            probe.write_text("probe")
            probe.read_text()
            probe.filesystem.delete_file(probe.path)
    except StoreUnreachable as error:
        problem = error.problem
    except PLNLPError:
        raise
    except (OSError, ValueError) as error:
        problem = storage_problem(error, folder.uri)
    else:
        return
    raise PLNLPError(f"{flag} {folder.uri} cannot be written: {problem}; {STORAGE_FIX}") from None


def check_listable(folder: Location, flag: str) -> None:
    """Lists ``folder``; refuses, in one sentence naming the URI, a store
    that does not answer, a bucket that does not exist or an empty folder."""
    problem = None
    try:
        with _without_patience():
            bucket = folder.path.split("/", 1)[0]
            if folder.filesystem.get_file_info(bucket).type == pafs.FileType.NotFound:
                raise OSError("NoSuchBucket")
            found = folder.files()
    except StoreUnreachable as error:
        problem = error.problem
    except PLNLPError:
        raise
    except (OSError, ValueError) as error:
        problem = storage_problem(error, folder.uri)
    if problem is not None:
        raise PLNLPError(f"{flag} {folder.uri} cannot be read: {problem}; {STORAGE_FIX}")
    if not found:
        raise PLNLPError(f"{flag} {folder.uri} holds no files; give the folder that holds "
                         "OGB's dataset folders.")


STORAGE_FIX = ("check the bucket's name and the store's endpoint and keys in the environment "
               "(AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY for S3).")


class StoreUnreachable(PLNLPError):
    """An object store that could not be reached, the bucket's file system
    not even made (pyarrow asks S3 for a bucket's region first): ``problem``
    says why, in :func:`storage_problem`'s words."""

    def __init__(self, root: str, problem: str) -> None:
        super().__init__(f"{root} cannot be reached: {problem}; {STORAGE_FIX}")
        self.problem = problem


def storage_problem(error: BaseException, uri: str = "") -> str:
    """What an object store's error means, in a few words; for a store at
    ``uri`` that does not answer, which endpoint was asked."""
    text = str(error)
    if store_did_not_answer(error):
        return f"the store does not answer{_endpoint(uri)}"
    known = {"NO_SUCH_BUCKET": "the bucket does not exist",
             "NoSuchBucket": "the bucket does not exist",
             "ACCESS_DENIED": "the store refused the keys",
             "InvalidAccessKeyId": "the store refused the keys",
             "SignatureDoesNotMatch": "the store refused the keys",
             "INVALID_ACCESS_KEY_ID": "the store refused the keys",
             "SIGNATURE_DOES_NOT_MATCH": "the store refused the keys"}
    for marker, meaning in known.items():
        if marker in text:
            return meaning
    return text.splitlines()[0][:200] if text else type(error).__name__


_PATIENT = contextvars.ContextVar("patient", default=True)


@contextmanager
def _without_patience() -> Iterator[None]:
    """Within the block, a store that does not answer is refused at once,
    not waited for (:mod:`components.storage.store_retries`): the checks
    before any work, where it means a wrong endpoint, not an outage."""
    token = _PATIENT.set(False)
    try:
        yield
    finally:
        _PATIENT.reset(token)


@functools.lru_cache(maxsize=32)
def _root_filesystem(root: str, patient: bool = True) -> tuple[pafs.FileSystem, str]:
    try:
        filesystem, path = (waited_for(lambda: pafs.FileSystem.from_uri(root)) if patient
                            else pafs.FileSystem.from_uri(root))
    except (OSError, ValueError) as error:
        problem = storage_problem(error, root)
        if problem.startswith(KNOWN_PROBLEMS):  # a store of a kind it reads, not reached
            raise StoreUnreachable(root, problem) from None
        raise PLNLPError(f"{root} is no storage this product can reach ({problem}); give a "
                         "local folder or an s3://, gs:// or abfs:// URI.") from None
    if patient and isinstance(filesystem, pafs.S3FileSystem) and "@" not in root:  # no keys
        filesystem = patient_s3(filesystem.region)
    return filesystem, path


KNOWN_PROBLEMS = ("the store does not answer", "the bucket does not exist",
                  "the store refused the keys")


def _endpoint(uri: str) -> str:
    """`` (AWS_ENDPOINT_URL=<url>)`` for an ``s3://`` URI, or that AWS's own
    endpoint was asked for want of one; nothing for other stores."""
    if not uri.startswith("s3://"):
        return ""
    endpoint = s3_endpoint()
    return f" (AWS_ENDPOINT_URL={endpoint})" if endpoint else \
        " (AWS_ENDPOINT_URL is not set, so AWS itself was asked)"


def _resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system of ``uri`` (one per bucket and process) and the path in it."""
    if not is_uri(uri):
        return pafs.LocalFileSystem(), uri
    parts = urlsplit(uri)
    filesystem, root_path = _root_filesystem(f"{parts.scheme}://{parts.netloc}", _PATIENT.get())
    return filesystem, f"{root_path.rstrip('/')}/{parts.path.strip('/')}".rstrip("/")


def _relative_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())
