"""The MLflow tracking store a run needs, checked before any work (before
Ray starts), and the lock that lets one process at a time create its
tables. Each problem is one :class:`PLNLPError` sentence that names the
address and the fix; every probe gives up within :data:`PROBE_TIMEOUT_S`
seconds."""
import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import requests
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from plnlp_core.errors import PLNLPError

PROBE_TIMEOUT_S = 5.0


def check_tracking_store(uri: str) -> None:
    """Refuses an MLflow store a run could not record to: an ``http(s)``
    server that does not answer, refuses the credentials or is no MLflow
    server, or a ``sqlite``/``file`` store whose folder cannot be written.
    Writes nothing (a probe file is created and removed)."""
    scheme = urlsplit(uri).scheme
    if scheme in ("http", "https"):
        _check_tracking_server(uri)
    elif local := local_store_path(uri):
        _check_writable(uri, local)


def local_store_path(uri: str) -> Path | None:
    """The file (``sqlite``) or folder (``file``, a plain path) of a local store."""
    scheme = urlsplit(uri).scheme
    if scheme == "sqlite":
        path = uri.removeprefix("sqlite:///").split("?")[0] if uri.startswith("sqlite:///") \
            else ""
        return Path(path) if path and path != ":memory:" else None
    if scheme == "file":
        return Path(urlsplit(uri).path)
    return Path(uri) if scheme == "" else None


def check_store_exists(uri: str) -> None:
    """Refuses a local store (``sqlite``, ``file``) that does not exist,
    before MLflow opens it: opening one creates it, and a command that only
    reads a store must leave none behind (``predict.py`` run outside the
    run's folder left an empty ``mlflow.db`` there)."""
    local = local_store_path(uri)
    if local is not None and not local.exists():
        raise PLNLPError(f"there is no MLflow store at {uri} ({local.absolute()} does not "
                         "exist); set MLFLOW_TRACKING_URI to the store that holds the run "
                         "(e.g. sqlite:////abs/path/mlflow.db), or run from the folder that "
                         "holds its mlflow.db.")


def _check_writable(uri: str, store: Path) -> None:
    is_file = urlsplit(uri).scheme == "sqlite"
    problem = _unwritable(store.parent if is_file else store)
    if problem is None and is_file and store.exists() and not os.access(store, os.W_OK):
        problem = f"{store} is read-only"
    if problem is not None:
        raise PLNLPError(f"cannot write the MLflow store {uri} ({problem}); point "
                         "MLFLOW_TRACKING_URI at a writable folder (e.g. "
                         "sqlite:////abs/path/mlflow.db), or run from one.")


def _unwritable(folder: Path) -> str | None:
    """Why files cannot be created in ``folder`` (made when missing), or ``None``."""
    existing = folder.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        with tempfile.NamedTemporaryFile(dir=existing, prefix=".plnlp-probe-"):
            pass
    except OSError as error:
        return f"cannot create files in {existing}: {(error.strerror or str(error)).lower()}"
    return None


def _check_tracking_server(uri: str) -> None:
    """One request, without MLflow's retries, to the server's REST API."""
    try:
        with _environment(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0",
                          MLFLOW_HTTP_REQUEST_TIMEOUT=str(int(PROBE_TIMEOUT_S))):
            MlflowClient(uri).search_experiments(max_results=1)
    except MlflowException as error:
        raise PLNLPError(_tracking_server_problem(uri, error)) from error


def _tracking_server_problem(uri: str, error: MlflowException) -> str:
    transport = _requests_error(error)
    if transport is not None:
        detail = connection_detail(transport)
        if isinstance(transport, requests.Timeout) or detail == "timed out":
            detail = f"no answer within {PROBE_TIMEOUT_S:g} s"
        return (f"no MLflow tracking server answers at {uri} ({detail}); start it (`mlflow "
                "server --host 0.0.0.0 --port 5000`) or fix MLFLOW_TRACKING_URI, or unset "
                "it to record to ./mlflow.db.")
    status = error.get_http_status_code()
    if status == 403 and "Invalid Host header" in str(error):  # its DNS-rebinding check
        host = urlsplit(uri).netloc
        return (f"the MLflow tracking server at {uri} refused the Host header {host} (HTTP 403, "
                "Invalid Host header: it accepts only the hosts it was told); start it with "
                f"`mlflow server --allowed-hosts {host},...` naming every address its clients "
                f"use (and `--cors-allowed-origins http://{host}` for the UI in a browser).")
    if error.error_code in ("UNAUTHENTICATED", "PERMISSION_DENIED"):
        return (f"the MLflow tracking server at {uri} refused the credentials (HTTP {status}); "
                "set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or "
                "MLFLOW_TRACKING_TOKEN.")
    return (f"{uri} answers but not as an MLflow tracking server (HTTP {status}); set "
            "MLFLOW_TRACKING_URI to the tracking server's address (e.g. http://host:5000).")


def _requests_error(error: BaseException) -> requests.RequestException | None:
    """The network error MLflow's REST client caught, if that is what failed."""
    seen = error
    while seen is not None:
        if isinstance(seen, requests.RequestException):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def connection_detail(error: BaseException) -> str:
    """A few words for why a connection failed, from its error's text."""
    text = str(error)
    for known, said in (("Connection refused", "connection refused"),
                        ("Name or service not known", "unknown host"),
                        ("DNS resolution failed", "unknown host"),
                        ("Domain name not found", "unknown host"),
                        ("No route to host", "no route to host"),
                        ("Network is unreachable", "network is unreachable"),
                        ("timed out", "timed out")):
        if known in text:
            return said
    return "cannot connect"


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Sets environment variables for the block, then restores them."""
    previous = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def tracking_store_lock(uri: str) -> Iterator[None]:
    """Holds an exclusive lock on a SQLite store's folder for the block, so
    that of two runs starting at once only one creates the tables and the
    experiment (MLflow's migrations fail when two processes run them). No-op
    for other stores."""
    store = local_store_path(uri) if urlsplit(uri).scheme == "sqlite" else None
    if store is None:
        yield
        return
    folder = store.absolute().parent
    folder.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock
