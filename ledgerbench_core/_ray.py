"""Shared Ray plumbing for ``harnesses.run --executor ray`` and ``judge.run --executor ray``.

Ray is an optional extra (``pip install 'ledgerbench[ray]'``): this module imports it only inside
its functions, and nothing imports this module unless a Ray executor was asked for.

What lives here: connecting to a cluster (or starting a local one), the resource options of a task,
telling a lost worker from an error in our own code, and shipping a file (the SQLite ERP) to the
workers through Ray's object store, verified by its SHA-256 on arrival.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

INSTALL_HINT = "pip install 'ledgerbench[ray]'"
NODE_CACHE_DIR = Path(tempfile.gettempdir()) / "ledgerbench-ray"
"""Node-local folder where shipped files land (one copy per node, named by hash)."""


class RayExecutorError(ValueError):
    """Ray is missing, unreachable or misconfigured; the message names the fix."""


class RayOptions(BaseModel):
    """How to reach the cluster and what one task asks of it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    address: str | None = None
    """``ray start`` head address (``HOST:6379``), ``ray://HOST:10001`` or ``auto``; None: the
    cluster in ``RAY_ADDRESS``, else a new local Ray instance on this machine."""
    num_cpus: float = Field(default=1.0, gt=0)
    """CPUs one task reserves (the scheduler packs tasks by it)."""
    memory_mb: int | None = Field(default=None, ge=1)
    """Memory one task reserves, in MiB (e.g. 1500 for a Claude CLI Node process)."""

    def task_options(self, *, max_retries: int) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": self.num_cpus, "max_retries": max_retries}
        if self.memory_mb is not None:
            options["memory"] = self.memory_mb * 1024 * 1024
        return options


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayExecutorError(
            f"--executor ray needs Ray, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


@contextlib.contextmanager
def ray_session(options: RayOptions) -> Iterator[Any]:
    """Connected to the cluster for the block; disconnects only if this call connected."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    address = options.address or os.environ.get("RAY_ADDRESS") or None
    where = address or "a new local instance"
    if address and _refuses_without_token(address):
        raise RayExecutorError(
            f"the Ray cluster at {where} requires token authentication and this process has no "
            f"token; {TOKEN_HINT}"
        )
    with _captured_stderr() as captured:
        try:
            ray.init(
                address=options.address,
                log_to_driver=False,
                configure_logging=False,
                namespace="ledgerbench",
            )
        except (ConnectionError, RuntimeError, ValueError) as error:
            if _AUTH_REFUSED.search(captured()):
                problem = (
                    "refused this process's authentication token"
                    if _has_token()
                    else "requires token authentication and this process has no token"
                )
                raise RayExecutorError(
                    f"the Ray cluster at {where} {problem}; {TOKEN_HINT}"
                ) from None
            detail = " ".join(str(error).split())[:300]
            raise RayExecutorError(
                f"cannot connect to Ray at {where} ({detail}); start a cluster with "
                "`ray start --head` and pass its address with --ray-address HOST:PORT"
            ) from None
    try:
        yield ray
    finally:
        ray.shutdown()


TOKEN_HINT = (
    "give it the cluster's token: RAY_AUTH_MODE=token with RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, "
    "or ~/.ray/auth_token); `ray get-auth-token` on the head node prints it"
)
_AUTH_REFUSED = re.compile(r"Unauthenticated|InvalidAuthToken|authentication token", re.I)


def _refuses_without_token(address: str, timeout: float = 5.0) -> bool:
    """Whether the GCS at ``HOST:PORT`` refuses a caller without a token, asked at once (Ray's
    own connect retries for 20 s and then names no cause). Only when this process has no token:
    with one, ``ray.init`` is the check."""
    if "://" in address or address == "auto" or ":" not in address:
        return False
    try:
        import grpc
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc
    except ImportError:
        return False
    if _has_token():
        return False
    channel = grpc.insecure_channel(address)
    try:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=timeout)
    except grpc.RpcError as error:
        return error.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        channel.close()
    return False


def _has_token() -> bool:
    """Whether this process would send Ray a token (``RAY_AUTH_TOKEN``, its path, the file)."""
    try:
        from ray._raylet import AuthenticationTokenLoader

        return bool(AuthenticationTokenLoader.instance().has_token(ignore_auth_mode=True))
    except Exception:  # an older Ray without token auth
        return False


@contextlib.contextmanager
def _captured_stderr() -> Iterator[Any]:
    """Route this process's fd 2 to a file while Ray connects (its C++ client logs a line a
    second while it retries); the captured text is replayed afterwards unless the connection
    failed, when the caller reads it (``captured()``) for the cause and says it in one line."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        failed = False
        try:
            yield lambda: _read(sink)
        except BaseException:
            failed = True
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if not failed:
                os.write(2, _read(sink).encode("utf-8", "replace"))


def _read(sink: Any) -> str:
    sink.flush()
    sink.seek(0)
    return sink.read().decode("utf-8", "replace")


def check_fits(ray: Any, options: RayOptions) -> None:
    """Refuse resources no node could ever give: Ray would queue such tasks forever."""
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    needs_memory = (options.memory_mb or 0) * 1024 * 1024
    for node in nodes:
        resources = node.get("Resources", {})
        if resources.get("CPU", 0) >= options.num_cpus and (
            resources.get("memory", 0) >= needs_memory
        ):
            return
    largest = max((n.get("Resources", {}).get("CPU", 0) for n in nodes), default=0)
    raise RayExecutorError(
        f"no node of the Ray cluster can give one task {options.num_cpus:g} CPU"
        + (f" and {options.memory_mb} MiB" if options.memory_mb else "")
        + f" (largest node: {largest:g} CPU); lower --ray-num-cpus/--ray-memory-mb"
    )


_LOST_WORKER_ERRORS = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "ObjectLostError",
    "OutOfMemoryError",
    "RaySystemError",
    "RayActorError",
)


def is_lost_worker(error: BaseException) -> bool:
    """True when the process or node running a task died (``WorkerCrashedError``,
    ``NodeDiedError``, objects lost with their node, Ray's out-of-memory killer), as opposed to an
    error our code raised (``RayTaskError``) or a cluster that cannot run the task at all
    (``RuntimeEnvSetupError``, ``TaskUnschedulableError``)."""
    ray = import_ray()
    lost = tuple(getattr(ray.exceptions, name) for name in _LOST_WORKER_ERRORS)
    return isinstance(error, lost) and not isinstance(error, ray.exceptions.RayTaskError)


def sqlite_path(db_url: str) -> Path | None:
    """The file behind a ``sqlite:///PATH`` URL; None for other databases."""
    prefix = "sqlite:///"
    if not db_url.startswith(prefix):
        return None
    return Path(db_url[len(prefix) :].split("?", 1)[0])


def error_detail(error: BaseException) -> str:
    """One line naming the Ray error, without its multi-line traceback."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text}"[:500]


# --------------------------------------------------------------------------------------------------
# Shipping a file through the object store
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShippedFile:
    """A file put in Ray's object store; workers materialise it with :func:`materialize`."""

    ref: Any
    """ObjectRef of the file's bytes (nested in task arguments, so only fetched when needed)."""
    sha256: str
    name: str
    size: int


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ship_file(ray: Any, path: Path) -> ShippedFile:
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    return ShippedFile(ref=ray.put(data), sha256=digest, name=path.name, size=len(data))


_VERIFIED: set[Path] = set()
_MATERIALIZE_LOCK = threading.Lock()


def materialize(shipped: ShippedFile, cache_dir: Path | None = None) -> Path:
    """The shipped file on this node, fetched once per node and checked against its hash.

    A copy already on the node is re-hashed once per process: a file changed or cut on disk is
    fetched again instead of being trusted.
    """
    cache_dir = cache_dir or NODE_CACHE_DIR
    suffix = Path(shipped.name).suffix
    target = cache_dir / f"{Path(shipped.name).stem}-{shipped.sha256[:16]}{suffix}"
    with _MATERIALIZE_LOCK:
        if target in _VERIFIED:
            return target
        if target.exists() and file_sha256(target) == shipped.sha256:
            _VERIFIED.add(target)
            return target
        ray = import_ray()
        data = ray.get(shipped.ref)
        actual = hashlib.sha256(data).hexdigest()
        if actual != shipped.sha256:
            raise RayExecutorError(
                f"{shipped.name} arrived with SHA-256 {actual[:12]}, expected "
                f"{shipped.sha256[:12]}; the object store returned other bytes"
            )
        cache_dir.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=cache_dir, suffix=".part")
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)  # atomic: other processes see a whole file or none
        _VERIFIED.add(target)
        return target


def add_executor_arguments(parser: Any, *, unit: str) -> None:
    """``--executor`` and the ``--ray-*`` options, shared by ``harnesses.run`` and ``judge.run``.

    ``unit`` names what one Ray task does, e.g. "question" or "trajectory".
    """
    group = parser.add_argument_group("distributed execution (Ray; pip install 'ledgerbench[ray]')")
    group.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help=f"where each {unit} runs: 'local' (this process, default) or 'ray' (one Ray task "
        f"per {unit} on a cluster; this process alone writes the output files)",
    )
    group.add_argument(
        "--ray-address",
        help="Ray cluster to use with --executor ray, e.g. 10.0.0.5:6379, ray://head:10001 or "
        "auto (default: RAY_ADDRESS, else a new local Ray instance)",
    )
    group.add_argument(
        "--ray-num-cpus",
        type=float,
        default=1.0,
        help=f"CPUs one {unit}'s task reserves (default 1), e.g. 0.25 for API-bound work",
    )
    group.add_argument(
        "--ray-memory-mb",
        type=int,
        help=f"memory one {unit}'s task reserves in MiB, e.g. 1500 for the Claude CLI harness",
    )


def check_executor_arguments(args: Any) -> str | None:
    """An error message for Ray options given without ``--executor ray``, else None."""
    given = [
        flag
        for flag, value, default in (
            ("--ray-address", args.ray_address, None),
            ("--ray-num-cpus", args.ray_num_cpus, 1.0),
            ("--ray-memory-mb", args.ray_memory_mb, None),
        )
        if value != default
    ]
    if given and args.executor != "ray":
        return f"{', '.join(given)} take effect only with --executor ray; add --executor ray"
    if args.ray_num_cpus <= 0:
        return "--ray-num-cpus must be above 0, e.g. --ray-num-cpus 0.5"
    if args.ray_memory_mb is not None and args.ray_memory_mb < 1:
        return "--ray-memory-mb must be at least 1, e.g. --ray-memory-mb 1500"
    return None
