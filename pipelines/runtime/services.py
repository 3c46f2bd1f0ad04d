"""The services a run needs, checked before any work: the MLflow tracking
store (before Ray starts) and the Ray cluster ``RAY_ADDRESS`` names. Each
problem is one :class:`PLNLPError` sentence that names the address and the
fix; every probe gives up within :data:`PROBE_TIMEOUT_S` seconds."""
import fcntl
import logging
import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

import grpc
import ray
import requests
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

from plnlp_core.errors import PLNLPError, first_line

PROBE_TIMEOUT_S = 5.0
GCS_PORT, CLIENT_PORT, DASHBOARD_PORT = 6379, 10001, 8265
LOCAL_RAY = ("", "auto", "local")
GCS_PORT_VARIABLE = "RAY_GCS_SERVER_PORT"  # the port a local Ray's GCS takes (Ray 2.60)
LOCAL_RAY_FIX = "unset RAY_ADDRESS to start a local Ray"
TOKEN_FIX = ("set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's token (`ray "
             "get-auth-token` on its head node prints it), or save it in ~/.ray/auth_token")


# MLflow -------------------------------------------------------------------------------------

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
        detail = _connection_detail(transport)
        if isinstance(transport, requests.Timeout) or detail == "timed out":
            detail = f"no answer within {PROBE_TIMEOUT_S:g} s"
        return (f"no MLflow tracking server answers at {uri} ({detail}); start it (`mlflow "
                "server --host 0.0.0.0 --port 5000`) or fix MLFLOW_TRACKING_URI, or unset "
                "it to record to ./mlflow.db.")
    status = error.get_http_status_code()
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


def _connection_detail(error: BaseException) -> str:
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


# Ray ----------------------------------------------------------------------------------------

def connect_ray(logging_level: int = logging.INFO) -> None:
    """Starts or joins Ray as ``ray.init`` does (``RAY_ADDRESS``, else a
    local Ray), after :func:`check_ray_address`, its driver logging at
    ``logging_level``; a connection Ray refuses becomes one sentence."""
    address = os.environ.get("RAY_ADDRESS", "").strip()
    check_ray_address(address)
    shown = f"RAY_ADDRESS={address}" if address else "the local Ray"
    try:
        if address:
            ray.init(ignore_reinit_error=True, logging_level=logging_level)
        else:
            start_local_ray(logging_level)
    except ray.exceptions.AuthenticationError as error:
        raise PLNLPError(f"Ray refused to connect to {shown} ({first_line(error)}); "
                         f"{TOKEN_FIX}.") from error
    except ConnectionError as error:
        raise PLNLPError(f"could not connect to {shown} ({first_line(error)}); start the "
                         f"cluster (`ray start --head`) or {LOCAL_RAY_FIX}.") from error
    except Exception as error:  # Ray's own start of a local node gave up
        if address not in LOCAL_RAY:
            raise
        raise PLNLPError(f"the local Ray did not start ({first_line(error)}); run again once "
                         "the machine has CPU and memory to spare (a loaded machine delays "
                         "Ray's start), or set RAY_ADDRESS to a running cluster.") from error


def start_local_ray(logging_level: int) -> None:
    """Starts a Ray of this process's own (unless it has one), as
    ``RAY_ADDRESS=local`` does:
    never another Ray on the same machine, which a bare ``ray.init()``
    would join (another user's ``ray start --head``). Its GCS takes a free
    port, and its workers get that address as ``RAY_ADDRESS``, so that
    Ray's own helpers that look Ray up (Ray Train's placement-group
    cleaner) find this one among several instead of failing with "Found
    multiple active Ray instances". It runs without the dashboard: its
    dozen processes took 3 s of a 2-core laptop's start (`ray start
    --head` and RAY_ADDRESS give one)."""
    port = free_port()
    address = f"{ray.util.get_node_ip_address()}:{port}"
    with mock.patch.dict(os.environ, {GCS_PORT_VARIABLE: str(port)}):
        ray.init(address="local", ignore_reinit_error=True, logging_level=logging_level,
                 include_dashboard=False, runtime_env={"env_vars": {"RAY_ADDRESS": address}})


def free_port() -> int:
    """A TCP port no process listens on now."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def check_ray_address(address: str) -> None:
    """Refuses a ``RAY_ADDRESS`` no Ray cluster answers at, or whose cluster
    refuses this machine's token: ``host:port`` (the GCS), ``ray://host:port``
    (Ray Client) or ``http(s)://host:port`` (the dashboard, which serves
    ``ray job submit`` but cannot run a driver). ``auto``, ``local`` and
    unset are left to ``ray.init``."""
    if address in LOCAL_RAY:
        return
    scheme, _, rest = address.rpartition("://")
    if scheme in ("http", "https"):
        _check_dashboard_address(address, rest)
    elif scheme == "ray":
        _check_grpc_server(address, *_host_port(address, rest, CLIENT_PORT))
    elif scheme:
        raise PLNLPError(f"RAY_ADDRESS={address} is not a Ray address; give host:port, "
                         f"ray://host:port or auto, or {LOCAL_RAY_FIX}.")
    else:
        _check_gcs(address, *_host_port(address, rest, GCS_PORT))


def _host_port(address: str, rest: str, default_port: int) -> tuple[str, int]:
    try:
        parts = urlsplit(f"//{rest}")
        host, port = parts.hostname, parts.port or default_port
    except ValueError:
        host = None
    if not host:
        raise PLNLPError(f"RAY_ADDRESS={address} is not host:port; give e.g. "
                         f"head-node:{GCS_PORT}, or {LOCAL_RAY_FIX}.")
    return host, port


def _unreachable(address: str, detail: str) -> PLNLPError:
    return PLNLPError(f"no Ray cluster answers at RAY_ADDRESS={address} ({detail}); start the "
                      f"cluster (`ray start --head` on its head node) or {LOCAL_RAY_FIX}.")


def _check_reachable(address: str, host: str, port: int) -> None:
    """A TCP connection to ``host:port`` within :data:`PROBE_TIMEOUT_S`."""
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
    except TimeoutError as error:
        raise _unreachable(address, f"no answer within {PROBE_TIMEOUT_S:g} s") from error
    except OSError as error:
        raise _unreachable(address, (error.strerror or str(error)).lower()) from error


def _check_grpc_server(address: str, host: str, port: int) -> None:
    """A gRPC connection (Ray Client's) ready within :data:`PROBE_TIMEOUT_S`."""
    _check_reachable(address, host, port)
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=PROBE_TIMEOUT_S)
        except grpc.FutureTimeoutError as error:
            raise _unreachable(address, f"no answer within {PROBE_TIMEOUT_S:g} s") from error


def _check_dashboard_address(address: str, rest: str) -> None:
    _check_reachable(address, *_host_port(address, rest, DASHBOARD_PORT))
    raise PLNLPError(f"RAY_ADDRESS={address} is a Ray dashboard address, which only `ray job "
                     f"submit --address {address} -- python pipelines/...` takes; to run here, "
                     f"set RAY_ADDRESS to the cluster's host:{GCS_PORT} or {LOCAL_RAY_FIX}.")


def _check_gcs(address: str, host: str, port: int) -> None:
    """Asks the cluster's GCS for its id with the token ``ray.init`` would
    send: refused, unreachable or not a GCS each give their own sentence."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        _check_reachable(address, host, port)  # the TLS handshake is Ray's to do
        return
    token = ray_auth_token()
    if _auth_mode() == "token" and token is None:
        raise PLNLPError(f"RAY_AUTH_MODE=token but no Ray token is set to connect to "
                         f"{address}; {TOKEN_FIX}.")
    metadata = [("authorization", f"Bearer {token}")] if token and _auth_mode() != "off" else []
    with grpc.insecure_channel(f"{_loopback_as_ray_does(host)}:{port}") as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        try:
            stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=PROBE_TIMEOUT_S,
                              metadata=metadata)
        except grpc.RpcError as error:
            raise _gcs_problem(address, error, bool(metadata)) from error


def _gcs_problem(address: str, error: grpc.RpcError, sent_token: bool) -> PLNLPError:
    code = error.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        which = "the authentication token sent" if sent_token else "a connection without a token"
        return PLNLPError(f"the Ray cluster at RAY_ADDRESS={address} refused {which}; "
                          f"{TOKEN_FIX}.")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return _unreachable(address, f"no answer within {PROBE_TIMEOUT_S:g} s")
    if code == grpc.StatusCode.UNAVAILABLE:
        return _unreachable(address, _connection_detail(error.details() or ""))
    return PLNLPError(f"RAY_ADDRESS={address} answers but not as a Ray cluster's GCS "
                      f"({code.name.lower()}); give the head node's host:{GCS_PORT}, or "
                      f"{LOCAL_RAY_FIX}.")


def _auth_mode() -> str:
    """``token``, ``off`` (set to anything else) or ``unset``: Ray sends its
    token when the mode is ``token``, or unset and a token is found."""
    mode = os.environ.get("RAY_AUTH_MODE")
    return "unset" if mode is None else ("token" if mode.lower() == "token" else "off")


def ray_auth_token() -> str | None:
    """The token Ray would send, in Ray's order: ``RAY_AUTH_TOKEN``, the
    file ``RAY_AUTH_TOKEN_PATH`` names, ``~/.ray/auth_token``."""
    if token := os.environ.get("RAY_AUTH_TOKEN", "").strip():
        return token
    path = Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token")
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def _loopback_as_ray_does(host: str) -> str:
    """``ray.init`` joins a loopback address at this machine's IP instead."""
    try:
        from ray._private.services import resolve_ip_for_localhost
    except ImportError:  # pragma: no cover - Ray moved it
        return host
    return resolve_ip_for_localhost(host)
