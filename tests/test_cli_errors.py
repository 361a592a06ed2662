"""Every bad input a newcomer can type gets ONE line, a non-zero exit and no traceback.

Each row runs a real command as typed, in a subprocess: a missing or unreadable ERP file, a wrong
URL, a bad flag, a signal, a closed pipe. The line must name the problem (``expect``); the fix is
part of each message. A row that is known to fail goes into ``RUNNER_ROWS_FAILING`` (marked
``xfail(strict=True)``, so it must be taken out the day it passes); none is there today.
"""

from __future__ import annotations

import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

import pytest

pytestmark = pytest.mark.timeout(600)

RUNNER = pytest.mark.xfail(strict=True, reason="runner pre-flight: branch reliability")


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    """The command after ``python``; ``{run}``, ``{erp}``, ``{garbage}``, ``{busy}``, ``{dead}``,
    ``{tmp}`` are filled in."""
    expect: str
    """Text the one line must hold (case-insensitive): it names the problem."""
    how: str = "plain"
    """plain; ``pipe``: stdout is a pipe whose reader is gone (``... | head``); ``sigterm`` or
    ``ctrl-c``: the signal arrives once ``marker`` is on stderr; only lines after it count."""
    marker: str = ""
    process: bool = False
    """Run in a fresh interpreter even when plain (pipes and signals always are): a few rows
    check the whole ``python -m`` path; the rest run the same code in-process (``runpy``)."""


def py(*args: str) -> tuple[str, ...]:
    return args


CASES: dict[str, Case] = {
    # ---- setting up the ERP
    "generate: unknown database scheme": Case(
        py("-m", "synthetic_erp", "generate", "--db", "mysql://u@h/erp"),
        "unsupported database URL scheme",
    ),
    "generate: file exists": Case(
        py("-m", "synthetic_erp", "generate", "--db", "sqlite:///{garbage}"), "already exists"
    ),
    "run: ERP URL without a file": Case(
        py("-m", "harnesses.run", "--erp-db", "sqlite:///", "--limit", "1", "--out", "{tmp}/r"),
        "names no SQLite file",
    ),
    "stats: missing ERP file": Case(
        py("-m", "synthetic_erp", "stats", "--db", "sqlite:///{tmp}/missing.db"),
        "does not exist",
        process=True,
    ),
    "stats: not a database": Case(
        py("-m", "synthetic_erp", "stats", "--db", "sqlite:///{garbage}"), "not a database"
    ),
    "synthetic_erp: unknown flag": Case(
        py("-m", "synthetic_erp", "generate", "--bogus"), "unrecognized arguments"
    ),
    "dataset validate: missing file": Case(
        py("-m", "ledgerbench.dataset", "validate", "{tmp}/missing.yaml"), "does not exist"
    ),
    "dataset info: missing file": Case(
        py("-m", "ledgerbench.dataset", "info", "{tmp}/missing.yaml"), "does not exist"
    ),
    # ---- serving it over MCP
    "erp_mcp: missing ERP file": Case(
        py("-m", "erp_mcp", "--db", "sqlite:///{tmp}/missing.db"), "does not exist"
    ),
    "erp_mcp: not a database": Case(
        py("-m", "erp_mcp", "--db", "sqlite:///{garbage}"), "not a database"
    ),
    "erp_mcp: unknown flag": Case(
        py("-m", "erp_mcp", "--bogus"), "unrecognized arguments", process=True
    ),
    "erp_mcp: bad transport": Case(
        py("-m", "erp_mcp", "--transport", "sse"), "invalid choice: 'sse'"
    ),
    "erp_mcp: port out of range": Case(
        py("-m", "erp_mcp", "--db", "{erp}", "--transport", "http", "--port", "99999"),
        "--port must be 1-65535",
    ),
    "erp_mcp: port taken": Case(
        py("-m", "erp_mcp", "--db", "{erp}", "--transport", "http", "--port", "{busy}"),
        "already in use",
    ),
    "erp_mcp: bad public URL": Case(
        py("-m", "erp_mcp", "--db", "{erp}", "--transport", "http", "--public-url", "erp.org"),
        "--public-url must be an http(s) URL",
    ),
    "erp_mcp link: no token": Case(
        py("-m", "erp_mcp", "link", "http://127.0.0.1:8765/erp/USMF/customers/SYNCUS-0001"),
        "no token",
    ),
    "erp_mcp tools --json | head": Case(py("-m", "erp_mcp", "tools", "--json"), "", how="pipe"),
    # ---- running agents (the runner)
    "run: missing ERP file": Case(
        py("-m", "harnesses.run", "--erp-db", "sqlite:///{tmp}/missing.db", "--out", "{tmp}/r1"),
        "no such file",
        process=True,
    ),
    "run: not a database": Case(
        py("-m", "harnesses.run", "--erp-db", "sqlite:///{garbage}", "--out", "{tmp}/r2"),
        "is not an SQLite database",
    ),
    # Obligations only: research questions with --erp-url first ask for a world (its own line).
    "run: nothing listens at --erp-url": Case(
        py(
            "-m",
            "harnesses.run",
            "--erp-url",
            "http://127.0.0.1:{dead}/mcp",
            "--out",
            "{tmp}/r3",
            "--task-type",
            "obligations",
        ),
        "cannot reach the ERP",
    ),
    "run: --erp-url not a URL": Case(
        py(
            "-m",
            "harnesses.run",
            "--erp-url",
            "localhost:8765",
            "--out",
            "{tmp}/r4",
            "--task-type",
            "obligations",
        ),
        "--erp-url localhost:8765: not an http(s) URL",
    ),
    "run: unknown flag": Case(py("-m", "harnesses.run", "--bogus"), "unrecognized arguments"),
    "run: unknown harness": Case(
        py("-m", "harnesses.run", "--harness", "gpt", "--erp-db", "{erp}", "--out", "{tmp}/r5"),
        "unknown harness 'gpt'",
    ),
    "run: missing dataset": Case(
        py("-m", "harnesses.run", "--dataset", "{tmp}/missing.yaml", "--erp-db", "{erp}"),
        "no such file or directory",
    ),
    "run: bad number": Case(py("-m", "harnesses.run", "--limit", "ten"), "invalid int value"),
    # ---- judging
    "judge.run: missing run": Case(
        py("-m", "judge.run", "{tmp}/runs/missing", "--judge", "rules"), "not found"
    ),
    "judge.run: unknown judge": Case(
        py("-m", "judge.run", "{run}", "--judge", "gpt5"), "use rules, a DSPy model string"
    ),
    "judge.run: no API key": Case(
        py("-m", "judge.run", "{run}", "--judge", "openai/gpt-5.2"), "no API key"
    ),
    "judge.run: missing --erp-db": Case(
        py("-m", "judge.run", "{run}", "--judge", "rules", "--erp-db", "sqlite:///{tmp}/no.db"),
        "does not exist",
    ),
    "judge.summary: no scores": Case(
        py("-m", "judge.summary", "{tmp}/runs/missing"), "no scores at"
    ),
    "judge.summary --json | head": Case(
        py("-m", "judge.summary", "{run}", "--json"), "", how="pipe"
    ),
    "judge.summary | head": Case(py("-m", "judge.summary", "{run}"), "", how="pipe"),
    "judge.compare: no --judges": Case(
        py("-m", "judge.compare", "{run}"), "the following arguments are required: --judges"
    ),
    "judge.human export: missing run": Case(
        py("-m", "judge.human", "export", "{tmp}/runs/missing", "--n", "2", "--out", "{tmp}/p"),
        "not found",
    ),
    "judge.human import: no key": Case(
        py("-m", "judge.human", "import", "{tmp}/grades.json", "--as", "human-alice"), "no key"
    ),
    # ---- statistics, viewer, export, listing
    "analysis.compare: unknown judge": Case(
        py("-m", "analysis.compare", "{run}", "--judge", "gpt5", "--out", "{tmp}/rep"),
        "gpt5.jsonl not found",
    ),
    "analysis.compare: no --out": Case(
        py("-m", "analysis.compare", "{run}"), "the following arguments are required: --out"
    ),
    "view: missing run": Case(
        py("-m", "ledgerbench", "view", "{tmp}/runs/missing", "--out", "{tmp}/v"),
        "not a run directory",
    ),
    "view: missing --dataset": Case(
        py("-m", "ledgerbench", "view", "{run}", "--out", "{tmp}/v", "--dataset", "{tmp}/no.yaml"),
        "does not exist",
    ),
    "export: missing run": Case(
        py("-m", "ledgerbench.export", "{tmp}/runs/missing", "--format", "inspect", "--out", "x"),
        "is not a run directory",
    ),
    "runs: missing folder": Case(
        py("-m", "ledgerbench", "runs", "{tmp}/nowhere"), "is not a folder"
    ),
    "runs --json | head": Case(py("-m", "ledgerbench", "runs", "{run}", "--json"), "", how="pipe"),
    # ---- the pipeline
    "ledgerbench: unknown flag": Case(py("-m", "ledgerbench", "--bogus"), "unrecognized"),
    "ledgerbench: bad agent spec": Case(
        py("-m", "ledgerbench", "--agent", "openai:gpt-5.2,effort"), "is not KEY=VALUE"
    ),
    "ledgerbench: missing dataset": Case(
        py("-m", "ledgerbench", "--dataset", "{tmp}/missing.yaml"), "does not exist"
    ),
    "ledgerbench: SIGTERM while generating": Case(
        py("-m", "ledgerbench", "--workspace", "{tmp}/ws-term"),
        "stopped (SIGTERM)",
        how="sigterm",
        marker="$ python -m synthetic_erp generate",
    ),
    "ledgerbench: Ctrl-C while generating": Case(
        py("-m", "ledgerbench", "--workspace", "{tmp}/ws-int"),
        "interrupted",
        how="ctrl-c",
        marker="$ python -m synthetic_erp generate",
    ),
}

RUNNER_ROWS_FAILING: set[str] = set()
"""Runner rows that still fail (none since the runner checks its input first)."""


def _params() -> list:
    return [
        pytest.param(name, id=name, marks=[RUNNER] if name in RUNNER_ROWS_FAILING else [])
        for name in CASES
    ]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory, erp_db_url: str):
    """The placeholders: a small judged run, a garbage file, a taken port, a dead port."""
    tmp = tmp_path_factory.mktemp("errors")
    garbage = tmp / "garbage.db"
    garbage.write_text("not a database\n")
    run = tmp / "runs" / "scripted"
    command = ["-m", "harnesses.run", "--harness", "scripted", "--limit", "2", "--no-progress"]
    command += ["--task-type", "obligations", "--erp-db", erp_db_url, "--out", str(run)]
    completed = subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    judged = subprocess.run(
        [sys.executable, "-m", "judge.run", str(run), "--judge", "rules"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert judged.returncode == 0, judged.stderr
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    values = {
        "tmp": str(tmp),
        "run": str(run),
        "erp": erp_db_url,
        "garbage": str(garbage),
        "busy": str(busy.getsockname()[1]),
        "dead": str(dead.getsockname()[1]),
    }
    yield values
    busy.close()
    dead.close()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("ERP_MCP_TOKEN", None)
    env["COLUMNS"] = "400"  # rich wraps at 80 columns off a terminal; one line stays one line
    return env


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _run_in_process(args: list[str], cwd: str, capfd, monkeypatch) -> tuple[int, str, str]:
    """``python -m MODULE ARGS`` in this process (``runpy``, as the interpreter does it): the
    same ``__main__`` code, without paying an interpreter start and the imports per row."""
    assert args[0] == "-m"
    for name in [k for k in os.environ if k.endswith("_API_KEY")] + ["ERP_MCP_TOKEN"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [args[1], *args[2:]])
    saved = signal.getsignal(signal.SIGTERM)
    capfd.readouterr()
    try:
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        signal.signal(signal.SIGTERM, saved)
    captured = capfd.readouterr()
    return code, captured.out, captured.err


def _run_process(args: list[str], cwd: str) -> tuple[int, str, str]:
    completed = subprocess.run(
        args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300
    )
    return completed.returncode, completed.stdout, completed.stderr


def _run_closed_pipe(args: list[str], cwd: str) -> tuple[int, str, str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as after `head` exits
    try:
        completed = subprocess.run(
            args, cwd=cwd, env=_env(), stdout=write_end, stderr=subprocess.PIPE, timeout=300
        )
    finally:
        os.close(write_end)
    return completed.returncode, "", completed.stderr.decode()


def _run_signalled(args: list[str], cwd: str, case: Case) -> tuple[int, str, str]:
    """Start the command, wait for ``marker`` on stderr, signal it, and return what it printed
    after the marker (the stop must be one line of its own)."""
    process = subprocess.Popen(
        args,
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    assert process.stderr is not None and process.stdout is not None
    before, after, seen = b"", b"", False
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 240
    while not seen and time.monotonic() < deadline and process.poll() is None:
        if selector.select(timeout=1.0):
            chunk = os.read(process.stderr.fileno(), 65536)
            before += chunk
            if case.marker.encode() in before:
                seen = True
    assert seen, f"never printed {case.marker!r}: {before.decode(errors='replace')}"
    if case.how == "ctrl-c":
        os.killpg(process.pid, signal.SIGINT)  # the whole group, as Ctrl-C in a terminal does
    else:
        process.send_signal(signal.SIGTERM)  # the process alone, as `kill PID` does
    out, rest = process.communicate(timeout=240)
    # Everything after the line that held the marker counts.
    marker_at = before.index(case.marker.encode())
    after = before[before.index(b"\n", marker_at) + 1 :] if b"\n" in before[marker_at:] else b""
    return process.returncode, out.decode(), (after + rest).decode(errors="replace")


@pytest.mark.filterwarnings("ignore:.*found in sys.modules after import:RuntimeWarning")
@pytest.mark.parametrize("name", _params())
def test_each_error_is_one_line_with_a_non_zero_exit(
    name: str, places: dict[str, str], capfd, monkeypatch
) -> None:
    case = CASES[name]
    args = [part.format(**places) for part in case.args]
    cwd = places["tmp"]
    if case.how == "pipe":
        code, out, err = _run_closed_pipe([sys.executable, *args], cwd)
    elif case.how in ("sigterm", "ctrl-c"):
        code, out, err = _run_signalled([sys.executable, *args], cwd, case)
    elif case.process:
        code, out, err = _run_process([sys.executable, *args], cwd)
    else:
        code, out, err = _run_in_process(args, cwd, capfd, monkeypatch)
    printed = _lines(out) + _lines(err)
    assert "Traceback" not in out + err, err
    assert code != 0, (code, out, err)
    if case.how == "pipe":
        assert len(printed) <= 1, printed  # a closed pipe is not the user's error: quiet is fine
        return
    assert len(printed) == 1, printed
    assert case.expect.lower() in printed[0].lower(), printed[0]


def test_the_table_covers_every_command_a_newcomer_types() -> None:
    commands = {" ".join(case.args[:2]) for case in CASES.values()}
    for module in (
        "synthetic_erp",
        "erp_mcp",
        "harnesses.run",
        "ledgerbench.export",
        "judge.run",
        "judge.summary",
        "judge.compare",
        "judge.human",
        "analysis.compare",
        "ledgerbench",
        "ledgerbench.dataset",
    ):
        assert f"-m {module}" in commands, module


def test_a_judge_that_cannot_start_leaves_no_scores_file(places: dict[str, str], tmp_path) -> None:
    """No API key: the command fails in one line and the run holds no new (empty) scores file,
    which would otherwise make analysis.compare ask for --judge."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(places["run"], run)
    before = sorted(p.name for p in (run / "scores").iterdir())
    code, _, err = _run_process(
        [sys.executable, "-m", "judge.run", str(run), "--judge", "openai/gpt-5.2"], str(tmp_path)
    )
    assert code == 2 and "no API key" in err
    assert (
        sorted(p.name for p in (run / "scores").iterdir())
        == before
        == [
            "rules.jsonl",
            "rules.manifest.json",
        ]
    )
    shutil.rmtree(run / "scores")
    code, _, _ = _run_process(
        [sys.executable, "-m", "judge.run", str(run), "--judge", "openai/gpt-5.2"], str(tmp_path)
    )
    assert code == 2 and not (run / "scores").exists()
