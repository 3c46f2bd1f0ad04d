"""The Ray cluster ``RAY_ADDRESS`` names, checked before a run joins it, or
the local Ray a run starts. Each problem is one :class:`PLNLPError`
sentence that names the address and the fix; every probe gives up within
:data:`~components.recording.tracking_store.PROBE_TIMEOUT_S` seconds."""
import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import psutil
import ray

from components.recording.tracking_store import PROBE_TIMEOUT_S, connection_detail
from components.train.worker_group import WorkerGroup
from pipelines.runtime.background_imports import imported_beside
from pipelines.runtime.environment import changed_environment
from pipelines.runtime.ray_internals import (
    TOKEN_NOTICE_LOGGER,
    ask_cluster_id,
    loopback_as_ray_does,
    own_session_processes,
    send_found_token,
)
from plnlp_core.errors import PLNLPError, first_line

GCS_PORT, CLIENT_PORT, DASHBOARD_PORT = 6379, 10001, 8265
LOCAL_RAY = ("", "auto", "local")
GCS_PORT_VARIABLE = "RAY_GCS_SERVER_PORT"  # the port a local Ray's GCS takes (Ray 2.60)
DASHBOARD_VARIABLE = "PLNLP_RAY_DASHBOARD"  # 1: a local Ray starts its dashboard too
# 0: Ray Train (2.60) starts no preemption watcher with each worker group
PREEMPTION_WATCHER_VARIABLE = "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"
# Ray 2.60 warns at every local start that token authentication is on by default: a
# command's own local Ray keeps that default, and says so only with --verbose
TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
# Ray's system config of a local Ray: each worker, as it starts, imports the module that makes
# its full garbage collections rarer
LOCAL_RAY_CONFIG = {"preload_python_modules": ["pipelines.runtime.worker_collections"]}
# Ray's words when a local node's start gave up, and how often a command tries it
START_TIMEOUT, START_ATTEMPTS = "timed out during startup", 2
LOCAL_RAY_FIX = "unset RAY_ADDRESS to start a local Ray"
TOKEN_FIX = ("set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN to the cluster's token (`ray "
             "get-auth-token` on its head node prints it), or save it in ~/.ray/auth_token")


def connect_ray(logging_level: int = logging.INFO, beside: Sequence[str] = ()) -> None:
    """Starts or joins Ray as ``ray.init`` does (``RAY_ADDRESS``, else a
    local Ray), after :func:`check_ray_address`, its driver logging at
    ``logging_level``, while the modules ``beside`` are imported; a
    connection Ray refuses becomes one sentence."""
    address = os.environ.get("RAY_ADDRESS", "").strip()
    check_ray_address(address)
    shown = f"RAY_ADDRESS={address}" if address else "the local Ray"
    try:
        with imported_beside(beside):
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


def sized_workers(workers: WorkerGroup) -> WorkerGroup:
    """``workers``, holding the CPUs ``--cpus-per-worker`` left to the
    cluster: a local Ray's CPUs shared among the workers (one worker trains
    on the whole machine, as it would without Ray), one CPU each on a
    cluster at ``RAY_ADDRESS``, whose nodes the run does not know."""
    if workers.cpus_per_worker is not None:
        return workers
    local = os.environ.get("RAY_ADDRESS", "").strip() in ("", "local")
    cpus = ray.cluster_resources().get("CPU", 1) // workers.num_workers if local else 1
    return dataclasses.replace(workers, cpus_per_worker=max(1, int(cpus)))


def start_local_ray(logging_level: int) -> None:
    """Starts a Ray of this process's own (unless it has one), as
    ``RAY_ADDRESS=local`` does:
    never another Ray on the same machine, which a bare ``ray.init()``
    would join (another user's ``ray start --head``). Its GCS takes a free
    port, and its workers get that address as ``RAY_ADDRESS``, so that
    Ray's own helpers that look Ray up (Ray Train's placement-group
    cleaner) find this one among several instead of failing with "Found
    multiple active Ray instances": the raylet inherits it from this
    process's environment while Ray starts, and its workers from the
    raylet, rather than from a job ``runtime_env``, with which no worker
    Ray prestarts can be used (an actor's start, 0.3 s, took 1.0 s). It
    runs without the dashboard, whose dozen processes took 3 s of a 2-core
    laptop's start (and without Ray's notice that its token authentication
    is on, unless ``logging_level`` is INFO, as ``--verbose`` gives), unless
    ``PLNLP_RAY_DASHBOARD=1`` asks for it: it then listens on 127.0.0.1 and
    its address is printed. Its workers start Ray Train's worker groups
    without a preemption watcher (unless ``RAY_TRAIN_ENABLE_PREEMPTION_WATCHER``
    is set): an actor of its own, a process that imports Ray Train (about 2
    CPU-s of a 2-core machine at each group's start), watching for the
    preemption of a cluster's node, which the one node of this machine's own
    Ray never has. Each of its workers runs full garbage collections ten
    times less often (:mod:`pipelines.runtime.worker_collections`, which it
    imports as it starts): a training actor's imports take 0.7 CPU-s fewer.

    Ray's processes start in a session of their own (:func:`own_session_processes`),
    so that a signal to the command's process group (``timeout``, Slurm, a
    terminal's Ctrl-C, ``kill -TERM -- -PGID``) reaches the driver alone,
    which then records its runs' end and shuts this Ray down itself, every
    epoch delivered; they still end with the driver (Ray starts them with
    ``PR_SET_PDEATHSIG``), a SIGKILLed one included.

    A start that timed out is tried once more, after what it launched is
    stopped: Ray 2.60's raylet gives its dashboard agent a fixed 15 s to
    start (ray-project/ray#65983), which a machine busy with other work can
    take from an agent that imports a few seconds' worth of modules."""
    dashboard = os.environ.get(DASHBOARD_VARIABLE, "").strip() in ("1", "true", "yes")
    running = set(psutil.Process().children(recursive=True))
    if logging_level > logging.INFO:  # a notice of Ray's default, not of this run's
        logging.getLogger(TOKEN_NOTICE_LOGGER).addFilter(_without_token_notice)
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            context = init_local_ray(logging_level, dashboard)
            break
        except Exception as error:
            stop_started_processes(running)
            if attempt == START_ATTEMPTS or START_TIMEOUT not in str(error):
                raise
    if dashboard and context.dashboard_url:
        print(f"Ray dashboard  http://{context.dashboard_url} while this run lasts (it asks "
              "for Ray's token: `ray get-auth-token` prints it)", flush=True)


def init_local_ray(logging_level: int, dashboard: bool) -> ray.client_builder.BaseContext:
    """One try of :func:`start_local_ray`: ``ray.init`` of a local node whose
    GCS takes a free port; Ray's context."""
    address = f"{ray.util.get_node_ip_address()}:{(port := free_port())}"
    settings = {GCS_PORT_VARIABLE: str(port), "RAY_ADDRESS": address,
                PREEMPTION_WATCHER_VARIABLE: os.environ.get(PREEMPTION_WATCHER_VARIABLE, "0")}
    with changed_environment(settings), own_session_processes():
        return ray.init(address="local", ignore_reinit_error=True, logging_level=logging_level,
                        include_dashboard=dashboard, dashboard_host="127.0.0.1",
                        _system_config=LOCAL_RAY_CONFIG)


def _without_token_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith(TOKEN_NOTICE)


def stop_started_processes(running: set[psutil.Process], grace_s: float = 5.0) -> None:
    """Ends the processes a local Ray that gave up starting left behind (a
    GCS or raylet it launched before it timed out), so that a refused run
    leaves nothing of Ray running: SIGTERM to this process's children that
    were not ``running`` before, then SIGKILL to those alive after
    ``grace_s`` seconds."""
    children = set(psutil.Process().children(recursive=True)) - running
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=grace_s)
    for child in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()


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
    if _auth_mode() == "token" and ray_auth_token() is None:
        raise PLNLPError(f"RAY_AUTH_MODE=token but no Ray token is set to connect to "
                         f"{address}; {TOKEN_FIX}.")
    sent = _token_metadata()
    try:
        _ask_cluster_id(host, port, PROBE_TIMEOUT_S, sent)
    except grpc.RpcError as error:
        if not _takes_the_found_token(error, host, port):
            raise _gcs_problem(address, error, bool(sent)) from error
        send_the_found_token()


def _takes_the_found_token(refusal: grpc.RpcError, host: str, port: int) -> bool:
    """Whether the GCS at ``host:port``, which refused a connection without
    a token (``RAY_AUTH_MODE`` unset), takes the token found on this machine."""
    token = ray_auth_token()
    if refusal.code() != grpc.StatusCode.UNAUTHENTICATED or _auth_mode() != "unset" \
            or token is None:
        return False
    try:
        _ask_cluster_id(host, port, PROBE_TIMEOUT_S, _authorization(token))
    except grpc.RpcError:
        return False
    return True


def send_the_found_token() -> None:
    """Has ``ray.init`` send the token found on this machine, as ``ray
    start`` does when ``RAY_AUTH_MODE`` is unset (Ray's own switch, which
    sets ``RAY_AUTH_MODE=token`` for this process and its children).
    ``ray.init`` sends none to a cluster ``RAY_ADDRESS`` names unless the
    mode says so: a head started with a token (``ray start --head`` on a
    machine that ran a local Ray, which writes ``~/.ray/auth_token``)
    refused such a run after 20 s of retries, which then said no cluster
    answered."""
    logging.getLogger(TOKEN_NOTICE_LOGGER).addFilter(_without_token_notice)
    send_found_token()


GCS_ANSWERS, GCS_REFUSES, GCS_SILENT = "answers", "refuses", "silent"


def gcs_state(address: str, timeout_s: float = 1.0) -> str:
    """Whether the GCS at ``address`` (``host:port``, as
    ``ray.get_runtime_context().gcs_address`` gives it) answers within
    ``timeout_s`` (any answer, a refusal of the token included, is a GCS
    that runs), refuses the connection (no process listens: a GCS that was
    killed), or stays silent (a lost head node, or one too busy to answer in
    time). It is sent the token found on this machine unless
    ``RAY_AUTH_MODE`` is off, as the driver's own connection is: asked
    without it every second, a token-started GCS logged a warning each time."""
    host, _, port = address.rpartition(":")
    token = ray_auth_token()
    metadata = _authorization(token) if token and _auth_mode() != "off" else []
    try:
        _ask_cluster_id(host, int(port), timeout_s, metadata)
    except grpc.RpcError as error:
        if error.code() == grpc.StatusCode.UNAVAILABLE:
            return GCS_REFUSES
        if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return GCS_SILENT
    return GCS_ANSWERS


def gcs_answers(address: str, timeout_s: float = 1.0) -> bool:
    """Whether the GCS at ``address`` answers within ``timeout_s`` (see
    :func:`gcs_state`)."""
    return gcs_state(address, timeout_s) == GCS_ANSWERS


def _ask_cluster_id(host: str, port: int, timeout_s: float,
                    metadata: list[tuple[str, str]]) -> None:
    """One ``GetClusterId`` request to the GCS at ``host:port`` with
    ``metadata``; raises ``grpc.RpcError`` unless it answers."""
    ask_cluster_id(f"{loopback_as_ray_does(host)}:{port}", timeout_s, metadata)


def _token_metadata() -> list[tuple[str, str]]:
    """The ``authorization`` header ``ray.init`` sends to a cluster
    ``RAY_ADDRESS`` names, if any: with ``RAY_AUTH_MODE=token`` alone."""
    token = ray_auth_token()
    return _authorization(token) if token and _auth_mode() == "token" else []


def _authorization(token: str) -> list[tuple[str, str]]:
    """The gRPC metadata that sends ``token`` as Ray's GCS reads it."""
    return [("authorization", f"Bearer {token}")]


def _gcs_problem(address: str, error: grpc.RpcError, sent_token: bool) -> PLNLPError:
    code = error.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        which = "the authentication token sent" if sent_token else "a connection without a token"
        return PLNLPError(f"the Ray cluster at RAY_ADDRESS={address} refused {which}; "
                          f"{TOKEN_FIX}.")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return _unreachable(address, f"no answer within {PROBE_TIMEOUT_S:g} s")
    if code == grpc.StatusCode.UNAVAILABLE:
        return _unreachable(address, connection_detail(error.details() or ""))
    return PLNLPError(f"RAY_ADDRESS={address} answers but not as a Ray cluster's GCS "
                      f"({code.name.lower()}); give the head node's host:{GCS_PORT}, or "
                      f"{LOCAL_RAY_FIX}.")


def _auth_mode() -> str:
    """``token``, ``off`` (set to anything else) or ``unset``: Ray sends its
    token to a cluster ``RAY_ADDRESS`` names when the mode is ``token``, and,
    unset with a token found, to one ``ray start`` or ``ray.init()`` finds."""
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


