"""``judge.run --executor ray``: each trajectory is scored by a Ray task; the driver writes scores.

Workers build the judge themselves from the run's :class:`JudgeRunConfig` (once per worker
process) or receive a pickled judge object when :func:`judge.run_judge` was given one. The verdict
cache stays one cache: a small actor on the driver's node serves ``get``/``put`` over the driver's
:class:`judge._cache.DiskCache`, so workers on other machines read and write the same entries and
concurrent writers of a key each leave a whole file (atomic replace). A SQLite ERP for the rules
judge's link checks, and the research world file its world-citation checks read, are shipped to the
workers through the object store and verified by hash: a worker on another machine reads the same
bytes as the driver's judge would.

Imported only when ``--executor ray`` is chosen.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge._base import Judge, JudgeAbort
from judge._cache import DiskCache
from ledgerbench_core._ray import (
    RayExecutorError,
    RayOptions,
    ShippedFile,
    check_fits,
    error_detail,
    import_ray,
    is_lost_worker,
    materialize,
    ray_session,
    ship_file,
    sqlite_path,
)
from ledgerbench_core.dataset import Question
from ledgerbench_core.scores import ScoreRecord
from ledgerbench_core.trajectory import TrajectoryRecord

if TYPE_CHECKING:
    from judge._runner import JudgeRunConfig

JUDGE_TASK_RETRIES = 2
"""Ray re-runs a judging task whose worker died this many times (judging is idempotent)."""


@dataclass(frozen=True)
class JudgeSpec:
    """What a worker needs to score: the config (or a pickled judge) and where the ERP is."""

    key: str
    """Identifies the judge a worker process may reuse between tasks."""
    config_json: str | None
    judge_pickle: bytes | None
    erp_db_url: str | None
    erp_file: ShippedFile | None
    world_file: ShippedFile | None
    """The research world the driver's judge reads (None: the run needs none)."""
    cache: Any
    """Handle of the cache actor, or None when caching is off."""


class CacheService:
    """The driver's verdict cache, served to the workers (runs as an actor on the driver's node)."""

    def __init__(self, directory: str) -> None:
        self._cache = DiskCache(directory)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._cache.get(key)

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._cache.put(key, value)


class ActorCache:
    """A worker's view of :class:`CacheService`, with :class:`DiskCache`'s interface."""

    def __init__(self, actor: Any) -> None:
        self._actor = actor

    def get(self, key: str) -> dict[str, Any] | None:
        return import_ray().get(self._actor.get.remote(key))

    def put(self, key: str, value: dict[str, Any]) -> None:
        import_ray().get(self._actor.put.remote(key, value))


# --------------------------------------------------------------------------------------------------
# Worker side
# --------------------------------------------------------------------------------------------------

_JUDGES: dict[str, Judge] = {}


def _worker_judge(spec: JudgeSpec) -> Judge:
    judge = _JUDGES.get(spec.key)
    if judge is not None:
        return judge
    from judge._runner import JudgeRunConfig, build_judge

    erp_db_url = spec.erp_db_url
    if spec.erp_file is not None:
        erp_db_url = f"sqlite:///{materialize(spec.erp_file)}"
    world_db = str(materialize(spec.world_file)) if spec.world_file is not None else None
    if spec.judge_pickle is not None:
        judge = pickle.loads(spec.judge_pickle)
    else:
        assert spec.config_json is not None
        config = JudgeRunConfig.model_validate_json(spec.config_json)
        # The driver's world path means nothing on another node: the shipped copy or none.
        config = config.model_copy(update={"cache": False, "world_db": world_db})
        judge = build_judge(config, erp_db_url, world_db)
    target = getattr(judge, "llm", judge)
    if hasattr(target, "cache"):
        target.cache = ActorCache(spec.cache) if spec.cache is not None else None
    if hasattr(judge, "prepare"):
        judge.prepare()
    _JUDGES[spec.key] = judge
    return judge


def score_on_worker(spec: JudgeSpec, question: Question, trajectory: TrajectoryRecord) -> str:
    """The Ray task: one ScoreRecord as JSON (JSON, so driver and worker may differ in pickles)."""
    from judge._runner import score_trajectory

    return score_trajectory(_worker_judge(spec), question, trajectory).model_dump_json()


# --------------------------------------------------------------------------------------------------
# Driver side
# --------------------------------------------------------------------------------------------------


class RayScoreExecutor:
    """Submits one Ray task per trajectory; futures resolve to a ScoreRecord, or None when the
    worker was lost :data:`JUDGE_TASK_RETRIES` + 1 times (the trajectory stays unjudged, and the
    next ``judge.run`` scores it)."""

    def __init__(
        self,
        ray: Any,
        options: RayOptions,
        *,
        config_json: str | None,
        judge: Judge | None,
        erp_db_url: str | None,
        world_db: str | None = None,
        cache_dir: str | None,
    ) -> None:
        self._ray = ray
        self._refs: dict[Future, Any] = {}
        self.lost = 0
        judge_pickle = _pickle_judge(judge) if judge is not None else None
        erp_file = None
        path = sqlite_path(erp_db_url) if erp_db_url else None
        if path is not None and path.is_file():
            erp_file = ship_file(ray, path)
            erp_db_url = None
        world_file = ship_world(ray, world_db) if world_db and config_json is not None else None
        self._cache_actor = _start_cache_actor(ray, cache_dir) if cache_dir else None
        key_source = (config_json or "").encode() + (judge_pickle or b"")
        spec = JudgeSpec(
            key=hashlib.sha256(key_source).hexdigest(),
            config_json=config_json,
            judge_pickle=judge_pickle,
            erp_db_url=erp_db_url,
            erp_file=erp_file,
            world_file=world_file,
            cache=self._cache_actor,
        )
        self._spec_ref = ray.put(spec)
        task_options = options.task_options(max_retries=JUDGE_TASK_RETRIES)
        self._remote = ray.remote(score_on_worker).options(**task_options)

    def submit(self, question: Question, trajectory: TrajectoryRecord) -> Future:
        ref = self._remote.remote(self._spec_ref, question, trajectory)
        outcome: Future = Future()
        self._refs[outcome] = ref
        ref.future().add_done_callback(lambda done: self._settle(outcome, done))
        return outcome

    def _settle(self, outcome: Future, done: Future) -> None:
        self._refs.pop(outcome, None)
        error = done.exception()
        if error is None:
            outcome.set_result(ScoreRecord.model_validate_json(done.result()))
            return
        cause = getattr(error, "cause", None)
        if isinstance(cause, JudgeAbort):
            outcome.set_exception(JudgeAbort(str(cause)))
        elif is_lost_worker(error):
            self.lost += 1
            outcome.set_result(None)
        else:
            outcome.set_exception(RayExecutorError(f"a judging task failed: {error_detail(error)}"))

    def cancel(self, futures: set[Future]) -> None:
        for future in futures:
            ref = self._refs.get(future)
            if ref is not None:
                self._ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._cache_actor is not None:
            self._ray.kill(self._cache_actor)
            self._cache_actor = None


def ship_world(ray: Any, world_db: str) -> ShippedFile:
    """The research world file the driver's judge reads, put in the object store."""
    path = sqlite_path(world_db) or Path(world_db)
    if not path.is_file():
        raise RayExecutorError(f"the research world {path}: file not found; pass --world-db PATH")
    return ship_file(ray, path)


def _pickle_judge(judge: Judge) -> bytes:
    import cloudpickle

    try:
        return cloudpickle.dumps(judge)
    except Exception as error:
        raise RayExecutorError(
            f"the judge object {type(judge).__name__} cannot be sent to Ray workers "
            f"({type(error).__name__}: {error}); build it from --judge instead"
        ) from None


def _start_cache_actor(ray: Any, cache_dir: str) -> Any:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    actor_class = ray.remote(CacheService)
    actor = actor_class.options(
        num_cpus=0,
        max_concurrency=16,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
    ).remote(cache_dir)
    return actor


@contextlib.contextmanager
def open_ray_executor(
    config: JudgeRunConfig, judge: Judge, erp_db_url: str | None, *, built: bool
) -> Iterator[RayScoreExecutor]:
    """Connected to the cluster, with the judge's spec in the object store, for the block.

    ``built``: the judge came from ``config`` (workers rebuild it); otherwise it is pickled.
    """
    options = RayOptions(
        address=config.ray_address, num_cpus=config.ray_num_cpus, memory_mb=config.ray_memory_mb
    )
    rules = getattr(judge, "rules", judge)
    if hasattr(rules, "resolver") and rules.resolver is None:
        erp_db_url = None  # the driver found the ERP unusable and turned link checks off
    world_db = config.world_db if getattr(rules, "world", None) is not None else None
    target = getattr(judge, "llm", judge)
    cache = getattr(target, "cache", None)
    cache_dir = str(cache.directory) if isinstance(cache, DiskCache) else None
    with ray_session(options) as ray:
        check_fits(ray, options)
        executor = RayScoreExecutor(
            ray,
            options,
            config_json=config.model_dump_json() if built else None,
            judge=None if built else judge,
            erp_db_url=erp_db_url,
            world_db=world_db,
            cache_dir=cache_dir,
        )
        try:
            yield executor
        finally:
            executor.close()
