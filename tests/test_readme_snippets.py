"""The README's agent-developer snippets run as written.

The commands of "For agent developers" run in a fresh folder: generate the ERP, serve it over
stdio and over HTTP with a token, print the tool catalogue; then the Python MCP client snippet
talks to that server, token and all, and the Claude CLI config names the same URL and token. The
one change: the README's port 8765 becomes a free port in the commands and the snippet alike, so
the test never collides with a server someone else runs.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT, free_port

pytestmark = pytest.mark.timeout(300)
README = (REPO_ROOT / "README.md").read_text()


def _blocks(language: str, section: str) -> list[str]:
    """The ```language blocks of the README section whose heading starts with ``section``."""
    part = README.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", part, re.S)


def _commands() -> list[str]:
    (block, *_) = _blocks("bash", "For agent developers")
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ERP_MCP_TOKEN"}
    return {**env, "FASTMCP_LOG_LEVEL": "WARNING", "FASTMCP_SHOW_SERVER_BANNER": "false"}


def _argv(command: str, port: int) -> list[str]:
    words = command.replace("8765", str(port)).split()
    assert words[0] == "python", command
    return [sys.executable, *words[1:]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """The README's commands run in a fresh folder; yields (folder, port, tool catalogue)."""
    folder = tmp_path_factory.mktemp("readme")
    port = free_port()
    generate, stdio, http, tools = _commands()
    for command in (generate, stdio, tools):
        assert "--transport http" not in command
    done = subprocess.run(
        _argv(generate, port), cwd=folder, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    over_stdio = subprocess.run(  # no client: the server reads EOF and ends
        _argv(stdio, port),
        cwd=folder,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert over_stdio.returncode == 0, over_stdio.stderr
    catalogue = subprocess.run(
        _argv(tools, port), cwd=folder, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert catalogue.returncode == 0, catalogue.stderr
    server = subprocess.Popen(
        _argv(http, port), cwd=folder, env=_env(), stderr=subprocess.PIPE, text=True
    )
    try:
        start_line = _first_line(server)
        yield folder, port, json.loads(catalogue.stdout), start_line
    finally:
        server.terminate()
        server.wait(timeout=30)


def _first_line(process: subprocess.Popen) -> str:
    """The server's first line, waited for as the runner waits: while it lives and uses CPU
    (a loaded machine can take minutes of wall time to start it), not on a clock."""
    from ledgerbench_core._startup import cpu_seconds, stall_seconds

    assert process.stderr is not None
    used, progress = -1.0, time.monotonic()
    while time.monotonic() - progress < stall_seconds():
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            return process.stderr.readline().strip()
        assert process.poll() is None, "the server exited before it printed its start line"
        if (cpu := cpu_seconds(process.pid) or 0.0) > used:
            used, progress = cpu, time.monotonic()
    raise TimeoutError(f"the server printed nothing and used no CPU for {stall_seconds():.0f} s")


def test_the_http_server_says_where_it_is_how_and_with_what_auth(served) -> None:
    _, port, _, start_line = served
    assert start_line == (
        f"erp_mcp: serving MCP at http://127.0.0.1:{port}/mcp (transport: streamable HTTP; "
        f"auth: bearer token; record links: http://127.0.0.1:{port}/erp/...)"
    )
    assert "s3cret" not in start_line


def test_the_catalogue_command_prints_the_tools(served) -> None:
    _, _, catalogue, _ = served
    assert "get_aging" in {tool["name"] for tool in catalogue}


def test_the_python_client_snippet_runs_as_written(served) -> None:
    folder, port, _, _ = served
    (snippet,) = _blocks("python", "For agent developers")
    script = folder / "client.py"
    script.write_text(snippet.replace("8765", str(port)))
    completed = subprocess.run(
        [sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    row = eval(completed.stdout.strip(), {})  # the snippet prints the first aging row (a dict)
    assert row["legal_entity"] == "USMF" and row["account"].startswith("SYNCUS-")


def test_the_claude_config_names_the_same_server_and_token() -> None:
    (config,) = _blocks("json", "For agent developers")
    server = json.loads(config)["mcpServers"]["erp"]
    http = _commands()[2]
    token = re.search(r"--token (\S+)", http).group(1)  # type: ignore[union-attr]
    assert server["url"] == "http://127.0.0.1:8765/mcp" and "--port 8765" in http
    assert server["headers"] == {"Authorization": f"Bearer {token}"}
