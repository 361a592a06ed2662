"""``--executor ray`` on a real local Ray cluster started by the test (one for the whole module).

The cluster is ``ray start --head`` with a few worker CPUs on loopback; drivers are this process
(``run``/``run_judge``) or real ``python -m harnesses.run`` subprocesses that the tests SIGKILL
and SIGINT. Nothing is mocked: the harnesses are plug-ins, the ERP is a real SQLite file served by
``erp_mcp``, the judge model is the fake OpenAI-compatible server over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harnesses._runner import (
    MANIFEST_FILE,
    TRAJECTORIES_FILE,
    RunConfig,
    read_trajectories,
    run,
)
from judge import ScoreStatus, read_scores
from judge.run import main as judge_main
from ledgerbench_core._ray import NODE_CACHE_DIR, file_sha256, sqlite_path
from ledgerbench_core.dataset import Dimension
from ledgerbench_core.trajectory import RunManifest, Status, TerminationReason
from synthetic_erp._catalog import STABLE_RECORD_BASE
from tests.conftest import REPO_ROOT
from tests.fakes.judge_data import question, trajectory, write_run
from tests.fakes.judge_openai_chat import chat_adapter_reply, serve_fake_chat
from tests.ray_cluster import (
    LOOPBACK_ENV,
    TEST_JUDGE_KEY_ENV,
    LocalRayCluster,
    local_ray_cluster,
)
from tests.test_runner_plugins import numbered_dataset, snapshot_of, write_dataset
from tests.test_runner_plugins import question as runner_question
from tests.world_fixtures import question_set, shared_folder, small_world

pytestmark = pytest.mark.timeout(300)
RAY_CLUSTER = pytest.mark.slow
"""Tests that start a real local Ray cluster (about 10 s of CPU each on 2 cores): the slow tier."""
PLUGINS = "tests.test_runner_plugins"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalRayCluster]:
    saved = {name: os.environ.get(name) for name in [*LOOPBACK_ENV, "HOME"]}
    os.environ.update(LOOPBACK_ENV)  # before Ray's first import here: it reads them then
    try:
        pytest.importorskip(
            "ray", reason="ray not installed (optional extra: pip install '.[ray]', make setup)"
        )
        with local_ray_cluster() as cluster:
            os.environ["HOME"] = str(cluster.home)  # drivers here and in subprocesses too
            yield cluster
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def ray_driver(ray_cluster: LocalRayCluster) -> Iterator[LocalRayCluster]:
    """This process connected to the cluster: in-process runs reuse one Ray job (and its warm
    workers) instead of connecting per run."""
    import ray

    ray.init(address=ray_cluster.address, log_to_driver=False, configure_logging=False)
    try:
        yield ray_cluster
    finally:
        ray.shutdown()


# --------------------------------------------------------------------------------------------------
# Nothing of Ray without --executor ray
# --------------------------------------------------------------------------------------------------


def test_local_executor_never_imports_ray(erp_server, tmp_path) -> None:
    run_dir = write_run(
        tmp_path / "run",
        [question("q0")],
        [trajectory("q0", answer="The open balance is USD 1,234.56.")],
    )
    dataset = numbered_dataset(tmp_path / "ds.yaml", 2, snapshot_of(erp_server.db_url))
    script = f"""
import sys
from pathlib import Path
import harnesses, harnesses.run, judge, judge.run, ledgerbench.pipeline
from harnesses._runner import RunConfig, run
from judge import JudgeRunConfig, run_judge
summary = run(RunConfig(dataset=Path({str(dataset)!r}), harness="{PLUGINS}:InstantHarness",
    erp_url={erp_server.url!r}, out=Path({str(tmp_path / "local")!r}), progress=False),
    log=lambda _: None)
assert summary.ran == 2, summary
run_judge(JudgeRunConfig(run_dir={str(run_dir)!r}, judge="rules", progress=False))
assert judge.run.build_parser().parse_args([{str(run_dir)!r}, "--judge", "rules"])
assert harnesses.run.build_parser().parse_args(["--executor", "local"])
leaked = sorted(m for m in sys.modules if m == "ray" or m.startswith("ray."))
print("RAY_MODULES", leaked)
"""
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env={k: v for k, v in os.environ.items() if k != "ERP_MCP_TOKEN"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert "RAY_MODULES []" in completed.stdout


# --------------------------------------------------------------------------------------------------
# judge.run --executor ray
# --------------------------------------------------------------------------------------------------


def grading_model(body: dict) -> str:
    """Scores each assertion shown: 1.0 for answers containing GOOD, else 0.25."""
    user = body["messages"][-1]["content"]
    assertions = re.search(r"\[\[ ## assertions ## \]\]\n(\[.*?\])\n\n", user, re.S).group(1)
    ids = [a["id"] for a in json.loads(assertions)]
    score = 1.0 if "GOOD" in user else 0.25
    return chat_adapter_reply(
        {"verdicts": [{"assertion_id": i, "score": score, "reason": "scripted"} for i in ids]}
    )


def _judge_run(tmp_path):
    tags = {Dimension.clarity: ["clarity.acronyms", "clarity.consistent_terms"]}
    questions = [question(f"q{i}", tags=tags) for i in range(6)]
    trajectories = [
        trajectory(f"q{i}", answer=("GOOD " if i % 2 else "weak ") + f"answer {i}")
        for i in range(6)
    ]
    return write_run(tmp_path / "run", questions, trajectories)


@RAY_CLUSTER
def test_judge_on_ray_matches_local_and_shares_one_cache(ray_driver, tmp_path, capsys) -> None:
    run_dir = _judge_run(tmp_path)
    os.environ.setdefault(TEST_JUDGE_KEY_ENV, "fake-judge-key")
    with serve_fake_chat(grading_model) as fake:
        common = [
            "--judge", "openai/gpt-4o-mini", "--base-url", fake.base_url,
            "--api-key-env", TEST_JUDGE_KEY_ENV, "--no-progress",
        ]  # fmt: skip
        assert judge_main([str(run_dir), *common, "--name", "local"]) == 0
        local_calls = len(fake.requests)
        assert local_calls == 6

        ray_args = ["--executor", "ray", "--ray-address", ray_driver.address, "--concurrency", "2"]
        assert judge_main([str(run_dir), *common, "--name", "onray", *ray_args]) == 0
        assert len(fake.requests) == 2 * local_calls  # its own cache dir: every call made again

        local = {r.question_id: r for r in read_scores(run_dir / "scores" / "local.jsonl")[0]}
        on_ray = {r.question_id: r for r in read_scores(run_dir / "scores" / "onray.jsonl")[0]}
        assert sorted(on_ray) == sorted(local) == [f"q{i}" for i in range(6)]
        for qid, record in on_ray.items():
            assert record.status is ScoreStatus.scored
            assert record.overall == local[qid].overall
            assert record.judge == "onray" and not record.cached
        assert on_ray["q1"].overall == 1.0 and on_ray["q0"].overall == 0.25

        # The workers wrote the verdicts into the driver's cache (through the cache actor):
        # scoring again from scratch on Ray makes no model call at all.
        cache_files = list((run_dir / "scores" / ".cache" / "onray").rglob("*.json"))
        assert len(cache_files) == 6
        assert judge_main([str(run_dir), *common, "--name", "onray", *ray_args, "--overwrite"]) == 0
        assert len(fake.requests) == 2 * local_calls
        again = read_scores(run_dir / "scores" / "onray.jsonl")[0]
        assert len(again) == 6 and all(r.cached for r in again)
    capsys.readouterr()


@RAY_CLUSTER
def test_rules_judge_on_ray_resolves_links_in_the_shipped_erp(
    ray_driver, erp_db_url: str, tmp_path, capsys
) -> None:
    link = "http://erp.example/erp/USMF/customers/SYNCUS-0001"
    missing = "http://erp.example/erp/USMF/customers/NO-SUCH-CUSTOMER"
    tags = {Dimension.citations: ["citations.erp_link_resolves"]}
    run_dir = write_run(
        tmp_path / "run",
        [question(f"q{i}", tags=tags) for i in range(2)],
        [
            trajectory("q0", answer=f"The balance of [SYNCUS-0001]({link}) is USD 1,234.56."),
            trajectory("q1", answer=f"The balance of [a customer]({missing}) is USD 1,234.56."),
        ],
        erp_db_url=erp_db_url,
        erp_snapshot_hash=snapshot_of(erp_db_url),
    )
    args = [str(run_dir), "--judge", "rules", "--no-progress"]
    assert judge_main([*args, "--name", "local"]) == 0
    assert judge_main([*args, "--name", "onray", "--executor", "ray"]) == 0
    local = {r.question_id: r for r in read_scores(run_dir / "scores" / "local.jsonl")[0]}
    on_ray = {r.question_id: r for r in read_scores(run_dir / "scores" / "onray.jsonl")[0]}
    assert {q: r.dimensions for q, r in on_ray.items()} == {
        q: r.dimensions for q, r in local.items()
    }
    citations = {q: r.dimensions[Dimension.citations] for q, r in on_ray.items()}
    assert citations["q0"].score == 1.0 and citations["q1"].score == 0.0
    capsys.readouterr()


def test_ray_options_without_ray_executor_are_refused(tmp_path, capsys) -> None:
    run_dir = _judge_run(tmp_path)
    assert judge_main([str(run_dir), "--judge", "rules", "--ray-address", "10.1.1.1:6379"]) == 2
    assert "add --executor ray" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------------
# harnesses.run --executor ray
# --------------------------------------------------------------------------------------------------

REFUSE_BEFORE_RAY = """
import sys
from harnesses.run import main
code = main(sys.argv[1:])
print("EXIT", code, "RAY_MODULES", sorted(m for m in sys.modules if m.split(".")[0] == "ray"))
"""


@pytest.mark.parametrize(
    ("servers", "named"),
    [
        (["--erp-url", "http://192.0.2.10:8765/mcp", "--world-url", "http://localhost:9/mcp"],
         "--world-url http://localhost:9/mcp"),
        (["--erp-url", "http://127.0.0.1:9/mcp"], "--erp-url http://127.0.0.1:9/mcp"),
    ],
)  # fmt: skip
def test_a_loopback_server_a_remote_cluster_cannot_reach_is_refused_before_ray(
    tmp_path: Path, servers: list[str], named: str
) -> None:
    """Issue 40: workers on another machine cannot reach this machine's loopback: a research
    run naming its world server there is refused in one line (exit 2), and Ray is never
    imported, let alone started or connected to (192.0.2.0/24 and 198.51.100.0/24 are
    documentation networks: no machine of this one's)."""
    dataset = numbered_dataset(tmp_path / "ds.yaml", 1)
    command = [sys.executable, "-c", REFUSE_BEFORE_RAY, "--dataset", str(dataset)]
    command += ["--harness", f"{PLUGINS}:InstantHarness", "--out", str(tmp_path / "r")]
    command += [*servers, "--research", "world", "--no-progress"]
    command += ["--executor", "ray", "--ray-address", "198.51.100.7:6379"]
    done = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert "EXIT 2 RAY_MODULES []" in done.stdout, (done.stdout, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert named in lines[0] and "cannot reach" in lines[0] and "198.51.100.7" in lines[0]
    assert not (tmp_path / "r").exists()


def test_loopback_servers_are_fine_for_a_cluster_on_this_machine() -> None:
    from harnesses._ray_executor import loopback_problem

    config = RunConfig(
        erp_url="http://127.0.0.1:9/mcp", world_url="http://[::1]:9/mcp", executor="ray"
    )
    for address in (None, "auto", "127.0.0.1:6379", "localhost:6379", "ray://127.0.0.1:10001"):
        assert loopback_problem(config.model_copy(update={"ray_address": address})) is None
    assert "2 node(s)" in (loopback_problem(config, other_nodes=2) or "")
    golden = config.model_copy(update={"research": "golden", "erp_url": "http://192.0.2.1/mcp"})
    assert loopback_problem(golden, other_nodes=2) is None  # the driver fetches golden documents


SCRIPTED_QUESTIONS = [
    runner_question(
        "r-credit", "What is the credit limit for SYNCUS-0001 in USMF as of March 2, 2026?"
    ),
    runner_question(
        "r-aging", "What is the aged balance for SYNCUS-0002 in USMF as of March 2, 2026?"
    ),
    runner_question("r-unknown", "Please summarise the weather on the moon for our treasury team."),
    runner_question("r-brief", "Business Brief report of Apple Inc.", task_type="business_brief"),
]


LOCAL_SERVER = re.compile(r"http://127\.0\.0\.1:\d+|https://erp\.ledgerbench\.test")
"""A record link's base: a server's own address, or the stable name the runner's servers cite."""


def _key_fields(path: Path) -> dict[tuple[str, int], tuple]:
    """What must match between executors; record links cite the run's own ERP server, whose port
    differs from run to run."""
    return {
        (r.question_id, r.trial): (
            r.status,
            r.termination.reason,
            LOCAL_SERVER.sub("http://ERP", r.answer),
            [call.name for call in r.tool_calls],
        )
        for r in read_trajectories(path)
    }


@RAY_CLUSTER
def test_scripted_on_ray_writes_the_same_records_as_local(
    ray_driver, erp_server, tmp_path: Path
) -> None:
    erp_db_url = erp_server.db_url
    dataset = write_dataset(tmp_path / "ds.yaml", SCRIPTED_QUESTIONS, snapshot_of(erp_db_url))
    common = {"dataset": dataset, "harness": "scripted", "trials": 2}
    local = run(
        RunConfig(**common, erp_url=erp_server.url, out=tmp_path / "local", progress=False),
        log=lambda _: None,
    )
    # On Ray the SQLite file itself is shipped to the workers, each serving its own copy.
    on_ray = run(
        RunConfig(
            **common,
            erp_db=erp_db_url,
            out=tmp_path / "ray",
            progress=False,
            executor="ray",
            concurrency=2,
        ),
        log=lambda _: None,
    )
    assert local.recorded == on_ray.recorded == on_ray.ran == 8
    expected = _key_fields(tmp_path / "local" / TRAJECTORIES_FILE)
    assert _key_fields(tmp_path / "ray" / TRAJECTORIES_FILE) == expected
    assert {fields[0] for fields in expected.values()} == {Status.ok}
    records = read_trajectories(tmp_path / "ray" / TRAJECTORIES_FILE)
    assert all(r.tool_calls for r in records if r.question_id in {"r-credit", "r-aging"})
    manifest = RunManifest.model_validate_json((tmp_path / "ray" / MANIFEST_FILE).read_text())
    local_manifest = RunManifest.model_validate_json(
        (tmp_path / "local" / MANIFEST_FILE).read_text()
    )
    assert manifest.config_fingerprint == local_manifest.config_fingerprint
    assert manifest.erp_snapshot_hash == local_manifest.erp_snapshot_hash == snapshot_of(erp_db_url)
    # Every worker serves its own copy, yet the links are the stable ones a local run cites.
    cited = {m.group(0) for r in records for m in LOCAL_SERVER.finditer(r.answer)}
    assert cited == {STABLE_RECORD_BASE}
    # The SQLite ERP reached the workers through the object store and was checked by hash.
    shipped = list(NODE_CACHE_DIR.glob(f"erp-{file_sha256(sqlite_path(erp_db_url))[:16]}.db"))
    assert shipped and file_sha256(shipped[0]) == file_sha256(sqlite_path(erp_db_url))


@RAY_CLUSTER
def test_ray_workers_offer_the_run_s_tools(ray_driver, erp_server, tmp_path: Path) -> None:
    """``--tools`` reaches the agents on the workers as it reaches local ones (``env.tools``)."""
    dataset = write_dataset(
        tmp_path / "ds.yaml", SCRIPTED_QUESTIONS, snapshot_of(erp_server.db_url)
    )
    summary = run(
        RunConfig(
            dataset=dataset,
            harness="tests.test_runner_plugins:EnvToolsAgent",
            erp_db=erp_server.db_url,
            out=tmp_path / "ray",
            progress=False,
            executor="ray",
            concurrency=2,
            tools=["get_*", "erp_info"],
        ),
        log=lambda _: None,
    )
    records = read_trajectories(tmp_path / "ray" / TRAJECTORIES_FILE)
    manifest = RunManifest.model_validate_json((summary.run_dir / MANIFEST_FILE).read_text())
    assert records and manifest.tools and manifest.tools[0] == "erp_info"
    for record in records:
        assert record.extra["tools"] == manifest.tools
        assert "query_entity_set" in record.extra["withheld_tools"]


@RAY_CLUSTER
def test_killed_worker_is_an_infrastructure_failure_and_reruns(
    ray_driver, erp_server, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    dataset = numbered_dataset(tmp_path / "ds.yaml", 4, snapshot_of(erp_server.db_url))
    config = RunConfig(
        dataset=dataset,
        harness="tests.ray_plugins:HangOnceHarness",
        harness_opts={"dir": str(signals), "hang": "q-002"},
        erp_url=erp_server.url,
        out=tmp_path / "run",
        timeout=120,
        progress=False,
        executor="ray",
        concurrency=2,
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        running = pool.submit(run, config, log=lambda _: None)
        pid_file = signals / "pid-q-002-0"
        deadline = time.monotonic() + 90
        while not pid_file.exists():
            assert time.monotonic() < deadline, "the hanging question never started"
            assert not running.done(), running.result()
            time.sleep(0.1)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        summary = running.result(timeout=120)
    records = {r.question_id: r for r in read_trajectories(tmp_path / "run" / TRAJECTORIES_FILE)}
    assert summary.recorded == 4 and not summary.interrupted
    lost = records["q-002"]
    assert lost.status is Status.error
    assert lost.termination.reason is TerminationReason.worker_lost
    assert lost.termination.infrastructure and lost.infrastructure_failure
    assert lost.error is not None and lost.error.class_ == "WorkerCrashedError"
    assert all(records[q].status is Status.ok for q in ("q-000", "q-001", "q-003"))

    # --retry-errors runs the lost question again (it answers this time) and keeps the loss.
    retried = run(config.model_copy(update={"retry_errors": True}), log=lambda _: None)
    assert retried.ran == 1
    records = {r.question_id: r for r in read_trajectories(tmp_path / "run" / TRAJECTORIES_FILE)}
    again = records["q-002"]
    assert again.status is Status.ok and again.termination.reason is TerminationReason.completed
    assert [a.termination.reason for a in again.previous_attempts] == [
        TerminationReason.worker_lost
    ]


def _driver_command(dataset: Path, out: Path, erp_url: str, address: str, *extra: str) -> list:
    return [
        sys.executable, "-m", "harnesses.run", "--dataset", str(dataset), "--erp-url", erp_url,
        "--out", str(out), "--executor", "ray", "--ray-address", address, "--no-progress",
        *extra,
    ]  # fmt: skip


def _driver_env() -> dict[str, str]:
    env = dict(os.environ, **LOOPBACK_ENV)
    env.pop("ERP_MCP_TOKEN", None)
    return env


def _wait_for(condition, process: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"the driver ended before {what}: {process.stderr.read()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@RAY_CLUSTER
def test_resume_after_the_driver_is_killed(ray_driver, erp_server, tmp_path: Path) -> None:
    dataset = numbered_dataset(tmp_path / "ds.yaml", 8, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    harness = ["--harness", f"{PLUGINS}:PacedHarness", "--harness-opt", "delay=0.4"]
    command = _driver_command(dataset, out, erp_server.url, ray_driver.address, *harness)
    trajectories = out / TRAJECTORIES_FILE
    process = subprocess.Popen(
        [*command, "--concurrency", "2"],
        cwd=REPO_ROOT,
        env=_driver_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = lambda: trajectories.exists() and trajectories.read_bytes().count(b"\n") >= 2  # noqa: E731
        _wait_for(lines, process, 150, "two records")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    before = trajectories.read_bytes()
    assert 2 <= len(read_trajectories(trajectories)) < 8

    # Resumed by the same settings (here in-process): only the missing questions run.
    config = RunConfig(
        dataset=dataset,
        harness=f"{PLUGINS}:PacedHarness",
        harness_opts={"delay": "0.4"},
        erp_url=erp_server.url,
        out=out,
        progress=False,
        executor="ray",
        concurrency=2,
    )
    summary = run(config, log=lambda _: None)
    after = trajectories.read_bytes()
    assert after.startswith(before[: before.rfind(b"\n") + 1]), "records before the kill are kept"
    keys = [(r.question_id, r.trial) for r in read_trajectories(trajectories)]
    assert len(after.splitlines()) == len(keys) == len(set(keys)) == 8
    assert summary.resumed + summary.ran == 8 and summary.resumed >= 2
    manifest = RunManifest.model_validate_json((out / MANIFEST_FILE).read_text())
    assert manifest.resume_count == 1 and not manifest.interrupted


@RAY_CLUSTER
def test_ctrl_c_cancels_the_remote_tasks_and_leaves_no_process(
    ray_driver, erp_server, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    signals.mkdir()
    dataset = numbered_dataset(tmp_path / "ds.yaml", 3, snapshot_of(erp_server.db_url))
    out = tmp_path / "run"
    harness = ["--harness", "tests.ray_plugins:ChildProcessHarness"]
    harness += ["--harness-opt", f"dir={signals}", "--concurrency", "2", "--timeout", "300"]
    process = subprocess.Popen(
        _driver_command(dataset, out, erp_server.url, ray_driver.address, *harness),
        cwd=REPO_ROOT,
        env=_driver_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = lambda: len(list(signals.glob("pid-*"))) == 2  # noqa: E731
        _wait_for(started, process, 150, "two questions to start their child process")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "resume" in stderr
    # Cancelled questions are not recorded; a run folder this start made and that holds no record
    # is removed again (a run folder exists only once a record is in it).
    assert not out.exists(), sorted(p.name for p in out.iterdir())
    assert "nothing was recorded" in stderr
    children = [int(path.read_text()) for path in signals.glob("pid-*")]
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in children):
        assert time.monotonic() < deadline, "a child process of a cancelled task is still running"
        time.sleep(0.1)


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


CURSOR_SIGNATURE = re.compile(r"(eyJ[A-Za-z0-9_-]+)\.[A-Za-z0-9_-]{22}")
"""A paging cursor's signature: each server process signs with a key of its own."""


def _masked(text: str) -> str:
    return CURSOR_SIGNATURE.sub(r"\1.SIG", LOCAL_SERVER.sub("http://ERP", text))


def _replay_fields(path: Path) -> dict[tuple[str, int], tuple]:
    """What a seeded faulty run must replay: the ending, the answer and every tool call (name,
    arguments, error flag, output), with the run's own ERP host:port and cursor signatures
    masked."""
    return {
        (r.question_id, r.trial): (
            r.termination.reason,
            _masked(r.answer),
            [
                (c.name, _masked(json.dumps(c.arguments)), c.is_error, _masked(c.output))
                for c in r.tool_calls
            ],
        )
        for r in read_trajectories(path)
    }


@RAY_CLUSTER
def test_ray_workers_inject_the_faults_the_manifest_records_and_replay_them(
    ray_driver, erp_db_url, tmp_path: Path
) -> None:
    """Issue 26: on Ray the workers' own ERP servers used to start without the fault settings.
    Now the same seed gives the same faults on the same calls as a local run."""
    dataset = REPO_ROOT / "datasets" / "obligations.yaml"
    common = {
        "dataset": dataset,
        "harness": "scripted",
        "limit": 12,
        "erp_db": erp_db_url,
        "erp_fault_rate": 0.3,
        "erp_fault_seed": 7,
        "progress": False,
    }
    run(RunConfig(**common, out=tmp_path / "local", concurrency=5), log=lambda _: None)
    on_ray = RunConfig(**common, out=tmp_path / "ray", concurrency=2, executor="ray")
    run(on_ray, log=lambda _: None)
    local = _replay_fields(tmp_path / "local" / TRAJECTORIES_FILE)
    remote = _replay_fields(tmp_path / "ray" / TRAJECTORIES_FILE)
    assert len(local) == 12 and remote == local
    faults = [c for fields in remote.values() for c in fields[2] if c[3].startswith("TRANSIENT")]
    assert faults, "the workers' servers injected faults"
    manifest = RunManifest.model_validate_json((tmp_path / "ray" / MANIFEST_FILE).read_text())
    assert manifest.config["erp_fault_rate"] == 0.3 and manifest.config["erp_fault_seed"] == 7
    # A second start on the same (reused) workers replays the same faults again.
    again = on_ray.model_copy(update={"out": tmp_path / "ray-again"})
    run(again, log=lambda _: None)
    assert _replay_fields(tmp_path / "ray-again" / TRAJECTORIES_FILE) == local


@pytest.fixture(scope="module")
def research_sets(
    erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> tuple[Path, list[Path]]:
    """A small world beside the test ERP and an entity and a brief set keyed on it."""
    folder = shared_folder(tmp_path_factory, worker_id, "world")
    world = small_world(erp_db_url, folder)
    kinds = ("entity_performance", "business_brief")
    return world, [question_set(world, erp_db_url, folder, kind, 6) for kind in kinds]


@RAY_CLUSTER
def test_research_on_ray_serves_the_world_and_replays_its_faults_as_locally(
    ray_driver, erp_db_url, research_sets, tmp_path: Path
) -> None:
    """Issue 40: Ray workers serve the research world (the world file shipped to them, a world
    server per worker process with the run's faults), and a seeded faulty research run gives
    the same records as the local executor: every tool call, answer and ending."""
    world, datasets = research_sets
    local: dict = {}
    remote: dict = {}
    for index, (dataset, limit) in enumerate(zip(datasets, (3, 2), strict=True)):
        common = {
            "dataset": dataset,
            "harness": "scripted",
            "limit": limit,
            "erp_db": erp_db_url,
            "world_db": str(world),
            "research": "world",
            "erp_fault_rate": 0.3,
            "erp_fault_seed": 7,
            "progress": False,
        }
        local_dir, ray_dir = tmp_path / f"local-{index}", tmp_path / f"ray-{index}"
        run(RunConfig(**common, out=local_dir, concurrency=5), log=lambda _: None)
        on_ray = RunConfig(**common, out=ray_dir, concurrency=2, executor="ray")
        summary = run(on_ray, log=lambda _: None)
        assert summary.ran == limit, summary
        local.update(_replay_fields(local_dir / TRAJECTORIES_FILE))
        remote.update(_replay_fields(ray_dir / TRAJECTORIES_FILE))
    assert len(local) == 5 and remote == local
    world_calls = [
        call
        for index in range(len(datasets))
        for record in read_trajectories(tmp_path / f"ray-{index}" / TRAJECTORIES_FILE)
        for call in record.tool_calls
        if call.server == "world"
    ]
    assert world_calls, "the agents on the workers reached the world"
    assert any(c.output.startswith("TRANSIENT") for c in world_calls), "world faults injected"
    assert {fields[0] for fields in remote.values()} <= {TerminationReason.completed}
    shipped = list(NODE_CACHE_DIR.glob(f"world-{file_sha256(world)[:16]}.db"))
    assert shipped and file_sha256(shipped[0]) == file_sha256(world)


@RAY_CLUSTER
def test_a_cluster_that_wants_a_token_is_named_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver without the cluster's token: one line naming token authentication (instantly
    where grpcio is installed, e.g. ray[default]; else after Ray's own 20 s connect timeout),
    not Ray's retry log and "start a cluster"."""
    cluster_home, driver_home = tmp_path / "cluster-home", tmp_path / "driver-home"
    cluster_home.mkdir()
    driver_home.mkdir()
    for name, value in {
        "HOME": str(cluster_home),
        "RAY_AUTH_MODE": "token",
        **LOOPBACK_ENV,
    }.items():
        monkeypatch.setenv(name, value)  # the cluster's environment (restored after the test)
    ray_cli = Path(sys.executable).with_name("ray")
    subprocess.run([str(ray_cli), "get-auth-token", "--generate"], check=True, timeout=60)
    with local_ray_cluster(cpus=1, home=cluster_home) as cluster:  # it holds the token
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
        env["HOME"] = str(driver_home)
        dataset = numbered_dataset(tmp_path / "ds.yaml", 1)
        command = [sys.executable, "-m", "harnesses.run", "--dataset", str(dataset)]
        command += ["--harness", f"{PLUGINS}:InstantHarness", "--out", str(tmp_path / "r")]
        command += ["--executor", "ray", "--ray-address", cluster.address, "--no-progress"]
        done = subprocess.run(
            command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180
        )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "token" in lines[0] and "ray get-auth-token" in lines[0], lines
    assert not (tmp_path / "r").exists()


@RAY_CLUSTER
def test_rules_judge_on_ray_reads_the_shipped_world(
    ray_driver, erp_db_url, research_sets, tmp_path: Path, capsys
) -> None:
    """Issue 40: the judge's Ray workers are shipped the research world (hash-checked, as the
    ERP), and their research scores, world citations included, are the local judge's."""
    world, datasets = research_sets
    own_world = tmp_path / f"world-{os.getpid()}-{time.monotonic_ns()}.db"  # a name of its own
    own_world.write_bytes(world.read_bytes())
    shipped = NODE_CACHE_DIR / f"{own_world.stem}-{file_sha256(own_world)[:16]}.db"
    run_dir = tmp_path / "run"
    config = RunConfig(
        dataset=datasets[0],
        harness="scripted",
        limit=3,
        erp_db=erp_db_url,
        world_db=str(own_world),
        research="world",
        out=run_dir,
        progress=False,
    )
    assert run(config, log=lambda _: None).ran == 3
    args = [str(run_dir), "--judge", "rules", "--no-progress", "--world-db", str(own_world)]
    try:
        assert judge_main([*args, "--name", "local"]) == 0
        assert not shipped.exists()
        assert judge_main([*args, "--name", "onray", "--executor", "ray"]) == 0
        assert shipped.is_file() and file_sha256(shipped) == file_sha256(own_world)
    finally:
        shipped.unlink(missing_ok=True)
    local = {r.question_id: r for r in read_scores(run_dir / "scores" / "local.jsonl")[0]}
    on_ray = {r.question_id: r for r in read_scores(run_dir / "scores" / "onray.jsonl")[0]}
    assert len(on_ray) == 3
    assert {q: r.dimensions for q, r in on_ray.items()} == {
        q: r.dimensions for q, r in local.items()
    }
    world_rules = [
        assertion
        for record in on_ray.values()
        for assertion in record.dimensions[Dimension.citations].assertions
        if assertion.decided_by == "rule:world_citations"
    ]
    assert world_rules and all(a.score is not None for a in world_rules), world_rules
    capsys.readouterr()


PIPELINE_SMALL = [
    *("--customers", "60", "--vendors", "60", "--questions", "4", "--conversations", "0"),
    *("--entity-questions", "3", "--brief-questions", "2"),
    *("--agent", "scripted,faults=0.3,fault_seed=7"),
]


@RAY_CLUSTER
@pytest.mark.timeout(900)
def test_pipeline_on_ray_runs_and_judges_research_sets_as_locally(
    ray_cluster: LocalRayCluster, tmp_path: Path, capfd
) -> None:
    """Issue 40: ``ledgerbench --executor ray`` keeps the research sets (it left them out while
    the judge's workers lacked the world): runs and judging on Ray, with faults on, give the
    local executor's scores for every record."""
    from judge import read_scores as scores_of
    from ledgerbench.pipeline import main as pipeline_main

    local_ws, ray_ws = tmp_path / "local", tmp_path / "ray"
    assert pipeline_main(["--workspace", str(local_ws), *PIPELINE_SMALL]) == 0
    ray_ws.mkdir()
    for name in ("erp.db", "world.db"):  # the same ERP, world and questions: only runs differ
        (ray_ws / name).write_bytes((local_ws / name).read_bytes())
    for path in (local_ws / "questions").iterdir():
        (ray_ws / "questions").mkdir(exist_ok=True)
        (ray_ws / "questions" / path.name).write_bytes(path.read_bytes())
    on_ray = ["--executor", "ray", "--ray-address", ray_cluster.address]
    assert pipeline_main(["--workspace", str(ray_ws), *PIPELINE_SMALL, *on_ray]) == 0
    output = capfd.readouterr().err
    assert "judge.run" in output and "--executor ray" in output

    def records(workspace: Path) -> dict:
        path = workspace / "runs" / "scripted-faulty-erp-world" / "scores" / "rules.jsonl"
        return {
            (r.question_id, r.trial): r.model_dump(mode="json", exclude={"judged_at"})
            for r in scores_of(path)[0]
        }

    local, remote = records(local_ws), records(ray_ws)
    task_types = {record["task_type"] for record in remote.values()}
    assert task_types == {"obligations", "entity_performance", "business_brief"}
    assert len(remote) == 9 and remote == local


@RAY_CLUSTER
def test_research_on_ray_through_a_world_url_gives_the_local_records(
    ray_driver, erp_db_url, research_sets, tmp_path: Path
) -> None:
    """Issue 40: ``--world-url`` on Ray: the workers reach the shared world server (its token
    handed to them in memory) and a research run against a seeded faulty server gives the
    records of the same run on the local executor (a fresh server for each run, as the faults a
    server draws count the calls it saw)."""
    from tests.conftest import start_world_server, stop_process

    world, datasets = research_sets
    records = {}
    for executor in ("local", "ray"):
        server, _ = start_world_server(
            f"sqlite:///{world}", "--error-rate", "0.3", "--fault-seed", "7", token="w0rld-t0ken"
        )
        config = RunConfig(
            dataset=datasets[0],
            harness="scripted",
            limit=3,
            erp_db=erp_db_url,
            world_url=server.url,
            world_token="w0rld-t0ken",
            research="world",
            out=tmp_path / executor,
            concurrency=2,
            executor=executor,
            progress=False,
        )
        try:
            assert run(config, log=lambda _: None).ran == 3
        finally:
            stop_process(server.process)
        records[executor] = _replay_fields(tmp_path / executor / TRAJECTORIES_FILE)
    assert len(records["local"]) == 3 and records["ray"] == records["local"]
    world_calls = [
        call
        for record in read_trajectories(tmp_path / "ray" / TRAJECTORIES_FILE)
        for call in record.tool_calls
        if call.server == "world"
    ]
    assert world_calls and any(c.output.startswith("TRANSIENT") for c in world_calls)
    manifest = (tmp_path / "ray" / MANIFEST_FILE).read_text()
    assert "w0rld-t0ken" not in manifest
    assert "w0rld-t0ken" not in (tmp_path / "ray" / TRAJECTORIES_FILE).read_text()
