"""``--harness claude``: the Claude CLI as an agent subprocess, read event by event.

Per question the harness runs::

    claude -p --output-format stream-json --verbose --include-partial-messages
        --no-session-persistence --model M [--effort E] --max-turns 20
        --append-system-prompt <shared instructions>
        --mcp-config <file holding only the ERP and research-world servers> --strict-mcp-config
        --tools "" --allowedTools mcp__erp mcp__world
        --disallowedTools <every file, shell, agent and task tool> --permission-mode dontAsk
        -- <question>

Choices, and why:

- ``--tools ""``: no built-in tool at all with ``--research world`` (the default: research goes to
  the world's MCP tools, ``mcp__world``), ``none`` or ``golden``. With ``--research web`` it is
  ``--tools WebSearch,WebFetch`` (``--tools ""`` with ``--harness-opt web=false``) and the config
  holds the ERP alone. Either way no file, shell or agent tool exists at all; ``--disallowedTools``
  repeats the denial as a second lock. An explicit built-in list also makes the CLI offer the MCP
  tools directly with their schemas, instead of deferring them behind ``ToolSearch`` (an extra
  turn).
- ``--permission-mode dontAsk`` with ``--allowedTools``: anything not allowed is denied and the
  denial is recorded; permissions are never bypassed.
- ``--disable-slash-commands``: no skills are listed in the system prompt (none could run anyway).
- ``--include-partial-messages``: text arrives as it is typed and every API message reports its
  output tokens, so a timeout keeps the half-written answer and the usage so far.
- The ERP bearer token never touches the disk: the config file says ``Bearer
  ${LEDGERBENCH_ERP_TOKEN}`` and the CLI expands it from its environment. The Anthropic key travels
  the same way.
- The ERP is reached over HTTP by default. ``--harness-opt erp_transport=stdio`` lets the CLI spawn
  the server instead, but ``claude -p`` (2.1.16x and later) does not wait for a slow stdio server:
  it starts with the server ``pending`` and no ERP tools, which fails the question (clear error).
- Provider failures: ``CLAUDE_CODE_MAX_RETRIES`` is sized to the question's retry window and
  ``API_TIMEOUT_MS`` to its stall bound (:func:`retry_settings`): the CLI's timeout covers the wait
  for response headers only (measured: a slow stream is never cut by it), so a provider that sends
  nothing is retried by the CLI itself. A stream that goes silent mid-message is the harness's to
  catch: no stream event for the stall bound ends the CLI with :class:`ProviderStalledError`
  (retried by the runner in the retry window, then ``provider_unavailable``). The CLI's
  ``system/api_retry`` events and its synthetic "API Error" messages (model ``<synthetic>``) are
  read from the stream, never taken as the model's answer, and each becomes a failed model event:
  no model output plus API errors ends as ``provider_unavailable`` (401/403/429/5xx, timeouts,
  refused connection) or ``provider_error`` (other 4xx, a malformed or truncated reply the CLI
  could not repair), an infrastructure failure, not a timeout. Unknown stream event types the CLI
  ignores, as the Messages API's versioning policy asks of clients.
- The run's tool-call cap (``--max-tool-calls``): the CLI cannot be told it, so the harness counts
  the calls the model issues; past the cap it lets the calls under it finish and then ends the
  CLI (``max_turns``; the calls past the cap are not recorded, ``extra["tool_call_cap"]`` counts
  them). A reply the CLI gives up on at the output cap, or a refusal, is the model's answer cut
  short (``answer_cut``), not a provider failure.
- Without ``--model`` the record's model is the one the CLI's ``system/init`` reports; a question
  with no ``result`` event (timeout) is priced from the price table.
- Each question gets its own HOME, working directory and TMPDIR in a temporary folder under the
  run's ``work_dir``, removed afterwards; the CLI runs in a new session (its own process group),
  and that whole group is ended (TERM, then KILL) at the deadline, on errors and at interpreter
  exit; Linux also kills the CLI if the runner dies (parent-death signal).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from harnesses._erp_client import ToolSpec
from harnesses._erp_process import parent_death_signal
from harnesses._preflight import ANTHROPIC_BASE_URL, ModelEndpoint, read_context_window
from harnesses._pricing import estimate_cost
from harnesses._protocol import (
    CONVERSATION_NOTE,
    AgentEnvironment,
    AgentOutcome,
    AgentTask,
    ErpEndpoint,
    ErpUnavailableError,
    HarnessOptions,
    ProviderError,
    ProviderStalledError,
    ProviderUnavailableError,
    TrajectoryDraft,
    retry_window_s,
    stall_timeout_s,
)
from harnesses._registry import HarnessLoadError, harness
from harnesses._stream_json import StreamParser
from harnesses._toolbox import WORLD_PREFIX, McpToolbox
from harnesses._wire import stalled
from ledgerbench_core._trial import TRIAL_HEADER
from ledgerbench_core.dataset import TaskType

PINNED_CLI_VERSION = "2.1.332"
"""The CLI version the harness is tested against (.ci/run installs it; README says so)."""
INSTALL_COMMAND = f"npm install -g @anthropic-ai/claude-code@{PINNED_CLI_VERSION}"
ERP_SERVER_NAME = "erp"
WORLD_SERVER_NAME = "world"
DEFAULT_MAX_TURNS = 20
CLI_OWN_PROMPT_CHARS = 30_000
"""What CLI 2.1.332, run as this harness runs it, sends on every request besides the
instructions, the MCP tool definitions and the question (its own system prompt, tool notes and
reminders), in JSON characters; tests/test_tool_choice.py measures it against the real CLI."""
DEFAULT_PROBE_MODEL = "claude-sonnet-4-5"
"""The model the pre-flight probes without ``--model`` (the CLI then picks its own default)."""
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
WEB_TOOLS = ("WebSearch", "WebFetch")
BLOCKED_BUILTIN_TOOLS = (
    "Agent", "Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
    "Bash", "BashOutput", "KillShell", "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep",
    "NotebookEdit", "NotebookRead", "TodoWrite", "ToolSearch", "Skill", "SlashCommand",
    "ExitPlanMode", "EnterWorktree", "ExitWorktree", "CronCreate", "CronDelete", "CronList",
    "ScheduleWakeup", "SendMessage", "ReportFindings", "Workflow", "ListMcpResourcesTool",
    "ReadMcpResourceTool", "ReadMcpResourceDirTool",
)  # fmt: skip
"""Every built-in of CLI 2.1 that reads or writes files, runs commands or starts agents."""

CREDENTIAL_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
PASSED_VARIABLES = (
    "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_BETAS",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "LANG", "LC_ALL", "TZ",
)  # fmt: skip
"""Environment the CLI inherits besides the credentials; everything else is left behind."""

TOKEN_VARIABLE = "LEDGERBENCH_ERP_TOKEN"
WORLD_TOKEN_VARIABLE = "LEDGERBENCH_WORLD_TOKEN"
TERM_GRACE_S = 0.3
EXIT_GRACE_S = 1.0
"""After the ``result`` event, how long the CLI may take to exit before its group is ended."""
STDERR_TAIL_CHARS = 4000
STREAM_LINE_LIMIT = 64 * 1024 * 1024


class ClaudeCliUnavailable(HarnessLoadError):
    """The ``claude`` binary or its credentials are missing; the message says what to do."""


class ClaudeCliError(RuntimeError):
    """The CLI failed (bad exit, API error, no result event); the message carries its own words."""


class ErpNotConnectedError(ClaudeCliError, ErpUnavailableError):
    """The CLI could not reach the ERP MCP server (``system/init`` status not ``connected``)."""


# --------------------------------------------------------------------------------------------------
# Process-group bookkeeping: no CLI or MCP child outlives the runner
# --------------------------------------------------------------------------------------------------

_LIVE_GROUPS: set[int] = set()
_ATEXIT_INSTALLED = False


def _kill_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; False when the group is gone."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def _kill_all_live_groups() -> None:
    for pgid in list(_LIVE_GROUPS):
        _kill_group(pgid, signal.SIGKILL)
        _LIVE_GROUPS.discard(pgid)


def _install_atexit() -> None:
    global _ATEXIT_INSTALLED
    if not _ATEXIT_INSTALLED:
        atexit.register(_kill_all_live_groups)
        _ATEXIT_INSTALLED = True


async def _end_group(process: asyncio.subprocess.Process, grace_s: float = TERM_GRACE_S) -> None:
    """TERM the whole process group, KILL it after ``grace_s``, reap the leader."""
    pgid = process.pid
    if _kill_group(pgid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and _group_alive(pgid):
            await asyncio.sleep(0.02)
        _kill_group(pgid, signal.SIGKILL)
    _LIVE_GROUPS.discard(pgid)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(process.wait(), timeout=2.0)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


# --------------------------------------------------------------------------------------------------
# Scratch folders: one per question, removed afterwards, and on the next start after a kill -9
# --------------------------------------------------------------------------------------------------

SCRATCH_PREFIX = "claude-"
OWNER_FILE = "owner.pid"
"""In each scratch folder: the pid of the process whose question it is."""
UNOWNED_GRACE_S = 60.0
"""A folder without an owner file is another process's in the instant before it writes one."""
_SWEPT: set[str] = set()


def sweep_stale_scratch(work_dir: Path) -> list[Path]:
    """Remove the scratch folders of questions whose process is gone (a runner or Ray worker killed
    with SIGKILL mid-question), once per folder and process. Live processes' folders stay (Ray
    workers on one machine share the work folder)."""
    key = str(work_dir.resolve())
    if key in _SWEPT:
        return []
    _SWEPT.add(key)
    removed = []
    for folder in work_dir.glob(f"{SCRATCH_PREFIX}*"):
        if folder.is_dir() and not _owner_alive(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _owner_alive(folder: Path) -> bool:
    try:
        pid = int((folder / OWNER_FILE).read_text().strip())
    except (OSError, ValueError):
        try:
            return time.time() - folder.stat().st_mtime < UNOWNED_GRACE_S
        except OSError:
            return False
    if pid == os.getpid():
        return True  # this process's own questions in flight
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --------------------------------------------------------------------------------------------------
# Command line and environment
# --------------------------------------------------------------------------------------------------


def find_claude(explicit: str | None = None) -> str:
    """Path of the ``claude`` binary, or :class:`ClaudeCliUnavailable` saying how to install it."""
    found = shutil.which(explicit or os.environ.get("LEDGERBENCH_CLAUDE_BIN") or "claude")
    if not found:
        raise ClaudeCliUnavailable(
            f"the claude CLI was not found on PATH; install it with `{INSTALL_COMMAND}` "
            "(or point --harness-opt claude_bin=PATH at it)"
        )
    return found


def credentials_problem(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """The one-line fix when no Anthropic credential is set, else None."""
    environ = os.environ if environ is None else environ
    if any(environ.get(name) for name in CREDENTIAL_VARIABLES):
        return None
    return (
        "no Anthropic credentials for the claude CLI: set ANTHROPIC_API_KEY "
        "(ANTHROPIC_BASE_URL for a compatible endpoint)"
    )


def check_credentials(environ: dict[str, str] | os._Environ[str] | None = None) -> None:
    if (problem := credentials_problem(environ)) is not None:
        raise ClaudeCliUnavailable(problem)


def mcp_config(env: AgentEnvironment, transport: str) -> dict[str, Any]:
    """The ``--mcp-config`` document: the ERP server and, with ``--research world``, the world's
    (nothing else: the config is strict); tokens as ``${VARIABLE}``, and over HTTP the trial
    header (the servers key their fault draws and audit entries by it)."""
    servers = {ERP_SERVER_NAME: _mcp_server_entry(env.erp, transport, TOKEN_VARIABLE, "ERP")}
    if env.world is not None:
        servers[WORLD_SERVER_NAME] = _mcp_server_entry(
            env.world, transport, WORLD_TOKEN_VARIABLE, "research world"
        )
    return {"mcpServers": servers}


def _mcp_server_entry(
    endpoint: ErpEndpoint, transport: str, token_variable: str, what: str
) -> dict[str, Any]:
    if transport == "stdio":
        if not endpoint.stdio_command:
            raise ClaudeCliError(
                f"--harness-opt erp_transport=stdio: the {what} has no stdio command"
            )
        command, *args = endpoint.stdio_command
        return {"type": "stdio", "command": command, "args": list(args)}
    server: dict[str, Any] = {"type": "http", "url": endpoint.url}
    headers = {"Authorization": f"Bearer ${{{token_variable}}}"} if endpoint.token else {}
    if endpoint.trial:  # not a secret: written as it is
        headers[TRIAL_HEADER] = endpoint.trial
    if headers:
        server["headers"] = headers
    return server


def cli_tool_name(name: str) -> str:
    """The CLI's name of a model-facing MCP tool name (``get_aging``, ``world__search``)."""
    if name.startswith(WORLD_PREFIX):
        return f"mcp__{WORLD_SERVER_NAME}__{name.removeprefix(WORLD_PREFIX)}"
    return f"mcp__{ERP_SERVER_NAME}__{name}"


def claude_tool_entries(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """The Messages API tool entries the CLI sends for these MCP tools: its ``mcp__SERVER__``
    name, the server's description and input schema (for bench/bench_tool_tokens.py; the test of
    ``--tools`` checks them against what the CLI sends)."""
    return [
        {
            "name": cli_tool_name(spec.name),
            "description": spec.description,
            "input_schema": spec.input_schema,
        }
        for spec in specs
    ]


def build_command(
    binary: str,
    question: str,
    *,
    instructions: str,
    mcp_config_path: str,
    model: str | None,
    effort: str | None,
    max_turns: int,
    web: bool,
    world: bool = False,
    tools: tuple[str, ...] | None = None,
    withheld_tools: tuple[str, ...] = (),
    conversation: bool = False,
    resume: str | None = None,
) -> list[str]:
    """The CLI's argv. The question comes last, after ``--``, so variadic options cannot eat it.
    ``web`` allows the built-in WebSearch/WebFetch (``--research web`` only); ``world`` the
    research world's MCP tools. ``tools`` (the run's ``--tools``, model-facing names) allows
    those MCP tools alone and ``withheld_tools`` are denied by name: a denied tool is not sent
    to the model at all. ``conversation``: the session is kept (in the conversation's own HOME)
    so the next agent turn can ``resume`` it by its session id."""
    servers = [ERP_SERVER_NAME, *([WORLD_SERVER_NAME] if world else [])]
    mcp = [f"mcp__{name}" for name in servers] if tools is None else map(cli_tool_name, tools)
    allowed = [*mcp, *(WEB_TOOLS if web else ())]
    denied = [*BLOCKED_BUILTIN_TOOLS, *map(cli_tool_name, withheld_tools)]
    argv = [binary, "-p", "--output-format", "stream-json", "--verbose"]
    argv += ["--include-partial-messages"]
    if not conversation:
        argv += ["--no-session-persistence"]
    if resume:
        argv += ["--resume", resume]
    if model:
        argv += ["--model", model]
    if effort:
        argv += ["--effort", effort]
    argv += ["--max-turns", str(max_turns)]
    argv += ["--append-system-prompt", instructions]
    argv += ["--mcp-config", mcp_config_path, "--strict-mcp-config"]
    argv += ["--tools", ",".join(WEB_TOOLS) if web else ""]
    argv += ["--allowedTools", *allowed]
    argv += ["--disallowedTools", *denied]
    argv += ["--permission-mode", "dontAsk", "--disable-slash-commands"]
    argv += ["--", question]
    return argv


def child_environment(
    home: Path, *, base_url: str | None, erp_token: str | None, environ: Any = None
) -> dict[str, str]:
    """A minimal environment: credentials, network settings, and the question's own HOME/TMPDIR."""
    environ = os.environ if environ is None else environ
    env = {"PATH": environ.get("PATH", os.defpath)}
    for name in (*CREDENTIAL_VARIABLES, *PASSED_VARIABLES):
        if environ.get(name):
            env[name] = environ[name]
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    tmp = home / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1",
    )
    if erp_token:
        env[TOKEN_VARIABLE] = erp_token
    return env


# --------------------------------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------------------------------

CLAUDE_OPTIONS = {
    "max_turns": "agent turns per question (default 20)",
    "web": "offer WebSearch and WebFetch (default true)",
    "erp_transport": "http (default), or stdio to let the CLI spawn the ERP server",
    "claude_bin": "path of the claude CLI",
    "keep_home": "keep each question's temporary HOME for debugging (default false)",
    "save_stream": "keep each question's raw event stream under work_dir/claude_streams "
    "(default true)",
    "context_window": "the model's context in tokens, for the pre-flight when the server does "
    "not say it",
}


@harness("claude", options=CLAUDE_OPTIONS)
class ClaudeCliHarness:
    """Options (``--harness-opt``): ``max_turns`` (20), ``web`` (true), ``erp_transport``
    (``http``, or ``stdio`` to let the CLI spawn the ERP server), ``claude_bin`` (path),
    ``keep_home`` (false: keep each question's temporary HOME for debugging), ``save_stream``
    (true: keep each question's raw event stream under ``work_dir/claude_streams``),
    ``context_window`` (tokens, for the pre-flight)."""

    name = "claude"
    conversational = True
    """Conversations: each agent turn resumes the CLI's session (``--resume``) in a HOME kept for
    the whole conversation (removed at the end of the run)."""

    @staticmethod
    def credentials_problem(options: HarnessOptions) -> str | None:
        return credentials_problem()

    def __init__(self, options: HarnessOptions) -> None:
        self.options = options
        self._conversation_homes: list[Path] = []
        self.model = options.model
        self.effort = options.reasoning_effort
        if self.effort is not None and self.effort not in EFFORT_LEVELS:
            # the CLI would only warn and silently use its default effort
            raise ValueError(
                f"--reasoning-effort {self.effort}: the claude CLI accepts "
                + ", ".join(EFFORT_LEVELS)
            )
        self.max_turns = options.get_int("max_turns", DEFAULT_MAX_TURNS)
        if self.max_turns < 1:
            raise ValueError(f"--harness-opt max_turns={self.max_turns}: must be at least 1")
        self.web = options.get_bool("web", True)
        self.keep_home = options.get_bool("keep_home", False)
        self.save_stream = options.get_bool("save_stream", True)
        self.transport = options.extra.get("erp_transport", "http")
        if self.transport not in {"http", "stdio"}:
            raise ValueError(
                f"--harness-opt erp_transport={self.transport}: expected http or stdio"
            )
        self.context_window = read_context_window(options)
        self.binary = find_claude(options.extra.get("claude_bin"))
        check_credentials()
        _install_atexit()

    async def model_endpoint(self, env: AgentEnvironment) -> ModelEndpoint | None:
        """What the pre-flight checks (``harnesses._preflight``): the Messages API the CLI will
        call (``--base-url``, else ``ANTHROPIC_BASE_URL``, else Anthropic's), with the CLI's
        credentials, and what the harness adds to the CLI's prompt (the instructions and the
        MCP tools the CLI is allowed, as the CLI sends them), plus an estimate of the CLI's own
        system prompt (:data:`CLI_OWN_PROMPT_CHARS`). None with subscription (OAuth)
        credentials alone: they do not open the API to a probe (the runner says the endpoint
        was not checked)."""
        key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key:
            return None
        async with McpToolbox(env) as servers:
            specs = await servers.list_tools()
        tools = claude_tool_entries(specs)
        return ModelEndpoint(
            wire="messages",
            base_url=(
                self.options.base_url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL
            ),
            model=self.model or DEFAULT_PROBE_MODEL,
            api_key=key,
            prompt=f"{env.instructions}\n{json.dumps(tools, separators=(',', ':'))}",
            tool_count=len(tools),
            context_window=self.context_window,
            harness="claude",
            streamed=True,
            client_prompt_chars=CLI_OWN_PROMPT_CHARS,
            bearer=not os.environ.get("ANTHROPIC_API_KEY"),
        )

    async def aclose(self) -> None:
        for folder in self._conversation_homes:
            shutil.rmtree(folder, ignore_errors=True)
        self._conversation_homes.clear()

    async def run(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        Path(env.work_dir).mkdir(parents=True, exist_ok=True)
        sweep_stale_scratch(Path(env.work_dir))
        if task.task_type is TaskType.operations:
            return await self._conversation_turn(task, env, draft)
        scratch = Path(
            tempfile.mkdtemp(
                prefix=f"{SCRATCH_PREFIX}{_safe(task.question_id)}-{task.trial}-", dir=env.work_dir
            )
        )
        (scratch / OWNER_FILE).write_text(str(os.getpid()))
        try:
            return await self._run_in(scratch, task, env, draft)
        finally:
            if not self.keep_home:
                shutil.rmtree(scratch, ignore_errors=True)

    async def _conversation_turn(
        self, task: AgentTask, env: AgentEnvironment, draft: TrajectoryDraft
    ) -> AgentOutcome:
        """One agent turn of a conversation: the first starts a session in a scratch folder kept
        for the conversation (``draft.extra`` names it), the next ones resume that session."""
        state = draft.extra.setdefault("claude_conversation", {})
        scratch = Path(state["scratch"]) if state.get("scratch") else None
        if scratch is None or not scratch.is_dir():
            prefix = f"{SCRATCH_PREFIX}{_safe(task.question_id)}-{task.trial}-"
            scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=env.work_dir))
            (scratch / OWNER_FILE).write_text(str(os.getpid()))
            self._conversation_homes.append(scratch)
            state["scratch"] = str(scratch)
        resume = draft.extra.get("session_id") if task.history else None
        state["resumed"] = bool(resume)
        return await self._run_in(scratch, task, env, draft, resume=resume)

    async def _run_in(
        self,
        scratch: Path,
        task: AgentTask,
        env: AgentEnvironment,
        draft: TrajectoryDraft,
        resume: str | None = None,
    ) -> AgentOutcome:
        home, cwd = scratch / "home", scratch / "cwd"
        home.mkdir(exist_ok=True)
        cwd.mkdir(exist_ok=True)
        config_path = scratch / "mcp-config.json"
        config_path.write_text(json.dumps(mcp_config(env, self.transport)))
        config_path.chmod(0o600)
        opening = task.task_type is TaskType.operations and not task.history
        argv = build_command(
            self.binary,
            f"{task.query}\n\n{CONVERSATION_NOTE}" if opening else task.query,
            instructions=env.instructions,
            mcp_config_path=str(config_path),
            model=self.model,
            effort=self.effort,
            max_turns=task.limits.cap(self.max_turns, task.limits.max_turns),
            web=self.web and env.web_allowed,
            world=env.world is not None,
            tools=env.tools,
            withheld_tools=env.withheld_tools,
            conversation=task.task_type is TaskType.operations,
            resume=resume,
        )
        child_env = child_environment(
            home,
            base_url=self.options.base_url,
            erp_token=env.erp.token if self.transport == "http" else None,
        )
        if env.world is not None and env.world.token and self.transport == "http":
            child_env[WORLD_TOKEN_VARIABLE] = env.world.token
        child_env.update(retry_settings(task.timeout_s, task.remaining(), task.stall_bound()))
        draft.extra.update(
            claude_options={
                "max_turns": task.limits.cap(self.max_turns, task.limits.max_turns),
                "web": self.web and env.web_allowed,
                "effort": self.effort,
                "erp_transport": self.transport,
                "tools": "direct (no ToolSearch)",
            }
        )
        stream_log = self._stream_log(env, task)
        draft.add_message("user", task.query)
        parser = StreamParser(
            draft, stall_s=task.stall_bound(), tool_call_cap=task.limits.tool_call_cap
        )
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=child_env,
            start_new_session=True,
            preexec_fn=parent_death_signal(),
            limit=STREAM_LINE_LIMIT,
        )
        _LIVE_GROUPS.add(process.pid)
        stderr_tail: list[str] = []
        stderr_task = asyncio.create_task(_drain(process.stderr, stderr_tail))
        try:
            await self._read_stream(
                process, parser, stream_log, retry_window_s(task.timeout_s), task.stall_bound()
            )
            returncode = await self._wait_for_exit(process, parser, draft)
            await asyncio.wait({stderr_task}, timeout=1.0)
        except BaseException as error:
            parser.finish(_cut_reason(error))
            self._estimate_cost(draft)  # before any await: the runner may not wait for us
            # Nothing the CLI could still write counts now: end its group at once (SIGKILL), so
            # the record closes within the grace even on a loaded machine.
            await _end_group(process, grace_s=0.0)
            raise
        finally:
            stderr_task.cancel()
            if stream_log is not None:
                stream_log.close()
            await _end_group(process, grace_s=0.0)  # reap any MCP child the CLI left behind
        parser.finish()
        try:
            return self._outcome(parser, returncode, "".join(stderr_tail), draft)
        finally:
            self._estimate_cost(draft)

    def _estimate_cost(self, draft: TrajectoryDraft) -> None:
        """No ``result`` event (timeout, crash): the cost of the tokens so far, by price table."""
        if draft.cost_usd is None and (draft.usage.input_tokens or draft.usage.output_tokens):
            draft.cost_usd = estimate_cost(self.model or draft.model, draft.usage)
            if draft.cost_usd is not None:
                draft.extra["cost_estimated"] = True

    async def _read_stream(
        self,
        process: asyncio.subprocess.Process,
        parser: StreamParser,
        log: Any,
        window_s: float,
        stall_s: float,
    ) -> None:
        """Feed stdout to the parser until the ``result`` event or the end of the stream. While a
        message streams, a gap of ``stall_s`` without an event means the provider went silent."""
        assert process.stdout is not None
        while True:
            wait = stall_s if parser.streaming else None
            window_closes = self._window_closes(parser, window_s)
            if window_closes is not None:
                wait = min(wait or math.inf, max(0.0, window_closes - time.monotonic()))
            try:
                line = await asyncio.wait_for(process.stdout.readline(), wait)
            except TimeoutError:
                if parser.streaming:
                    raise stalled("stream", stall_s) from None
                self._check_retry_window(parser, window_s, closed=True)
                continue
            if not line:
                return
            if log is not None:
                log.write(line)
            event = parser.feed_line(line)
            if not event:
                continue
            if event.get("type") == "system" and event.get("subtype") == "init":
                status = parser.erp_status(ERP_SERVER_NAME)
                if status != "connected":
                    raise ErpNotConnectedError(_not_connected_message(status, self.transport))
            if event.get("type") == "result":
                return
            if parser.cap_passed and not parser.calls_pending and not parser.streaming:
                # past the run's tool-call cap, the calls under it have their results, and the
                # message that passed the cap has ended (so every call it asked for is counted)
                return
            self._check_retry_window(parser, window_s)

    @staticmethod
    def _window_closes(parser: StreamParser, window_s: float) -> float | None:
        """When the retry window of a provider failing before any model output closes."""
        if parser.has_model_output or parser.first_retry is None:
            return None
        return parser.first_retry + window_s

    @staticmethod
    def _check_retry_window(parser: StreamParser, window_s: float, closed: bool = False) -> None:
        """A provider that failed for the whole retry window before the model said anything is
        unavailable: stop now rather than burn the budget."""
        if parser.has_model_output or parser.first_retry is None:
            return
        if closed or time.monotonic() - parser.first_retry > window_s:
            raise ProviderUnavailableError(
                f"the provider kept failing for {window_s:.0f} s before any model output: "
                f"{parser.draft.provider_failure or 'API errors'}"
            )

    async def _wait_for_exit(
        self, process: asyncio.subprocess.Process, parser: StreamParser, draft: TrajectoryDraft
    ) -> int:
        """The CLI's exit code; after the result, a CLI slow to exit is ended, not waited on; past
        the tool-call cap the CLI is ended at once."""
        if parser.result is None and parser.cap_passed:
            draft.extra["cli_stopped_at_tool_call_cap"] = True
            await _end_group(process, grace_s=0.0)
            return process.returncode if process.returncode is not None else -signal.SIGKILL
        if parser.result is None:
            return await process.wait()
        try:
            return await asyncio.wait_for(process.wait(), timeout=EXIT_GRACE_S)
        except TimeoutError:
            draft.extra["cli_exit_forced"] = True
            await _end_group(process)
            return process.returncode if process.returncode is not None else -signal.SIGKILL

    def _stream_log(self, env: AgentEnvironment, task: AgentTask) -> Any:
        if not self.save_stream:
            return None
        folder = Path(env.work_dir) / "claude_streams"
        folder.mkdir(parents=True, exist_ok=True)
        return (folder / f"{_safe(task.question_id)}__{task.trial}.jsonl").open("wb")

    def _outcome(
        self, parser: StreamParser, returncode: int, stderr: str, draft: TrajectoryDraft
    ) -> AgentOutcome:
        result = parser.result
        draft.extra["exit_code"] = returncode
        if stderr.strip():
            draft.extra["stderr_tail"] = _one_line(stderr)[-1000:]
        if parser.cap_passed:  # stopped at the run's tool-call cap, like every harness
            return AgentOutcome(answer=parser.answer, max_turns_reached=True)
        if parser.reply_cut is not None and parser.has_model_output:
            return AgentOutcome(answer=parser.answer)  # the answer stands, marked cut
        if result is None:
            detail = _one_line(stderr)[-STDERR_TAIL_CHARS:] or "no output on stderr"
            if not parser.has_model_output and (parser.retries or _mentions_api_error(stderr)):
                raise ProviderUnavailableError(
                    f"the claude CLI exited with code {returncode} after API errors: "
                    f"{draft.provider_failure or detail}"
                )
            raise ClaudeCliError(
                f"the claude CLI exited with code {returncode} without a result event: {detail}"
            )
        subtype = result.get("subtype")
        if subtype == "error_max_turns":
            return AgentOutcome(answer=parser.answer, max_turns_reached=True)
        if subtype != "success" or result.get("is_error"):
            errors = result.get("errors") or [result.get("result") or ""]
            status = result.get("api_error_status")
            ending = "an API error" if subtype == "success" else subtype
            message = (
                f"the claude CLI ended with {ending}"
                + (f" (API status {status})" if status else "")
                + f": {_one_line(' '.join(map(str, errors)))[:1000]}"
            )
            if status is not None or result.get("terminal_reason") == "api_error":
                raise _api_failure(status, message)
            raise ClaudeCliError(message)
        return AgentOutcome(answer=parser.answer)


def retry_settings(
    budget_s: float, remaining_s: float, stall_s: float | None = None
) -> dict[str, str]:
    """``CLAUDE_CODE_MAX_RETRIES`` sized to the retry window, ``API_TIMEOUT_MS`` to the stall bound.

    The CLI's backoff starts near 0.5 s and doubles (with jitter): ``n`` retries wait about
    ``0.5 * (2**n - 1) * 1.25`` s, kept within the retry window of :func:`retry_window_s`. The
    CLI's request timeout covers the wait for response headers (not the stream that follows), so it
    is the stall bound (default :func:`stall_timeout_s`), never more than the time left."""
    window = retry_window_s(budget_s)
    retries = max(1, min(10, int(math.log2(window / 0.625 + 1))))
    stall = stall_s if stall_s is not None else stall_timeout_s(budget_s)
    timeout_ms = int(max(1.0, min(stall, remaining_s)) * 1000)
    return {"CLAUDE_CODE_MAX_RETRIES": str(retries), "API_TIMEOUT_MS": str(timeout_ms)}


_MALFORMED_REPLY = ("malformed", "not valid json", "truncated", "no_events", "invalid json")
"""Words of the CLI's own API error text for a reply it received but could not use."""


def _api_failure(status: Any, message: str) -> Exception:
    """The provider failed (outage, auth, quota, timeouts: unavailable) or answered with something
    unusable (a refused request, a malformed or cut reply: error)."""
    if isinstance(status, int) and 400 <= status < 500 and status not in (401, 403, 408, 429):
        return ProviderError(message)
    if status is None and any(word in message.lower() for word in _MALFORMED_REPLY):
        return ProviderError(message)
    return ProviderUnavailableError(message)


def _cut_reason(error: BaseException) -> str:
    """What the transcript says of an API call still open when the run ended with ``error``."""
    if isinstance(error, asyncio.CancelledError):
        return "cut off by the deadline"
    if isinstance(error, ProviderStalledError):
        return f"{type(error).__name__}: {error}"
    return f"the run ended: {type(error).__name__}"


def _mentions_api_error(stderr: str) -> bool:
    lowered = stderr.lower()
    return "api error" in lowered or "econnrefused" in lowered or "fetch failed" in lowered


def _not_connected_message(status: str | None, transport: str) -> str:
    message = (
        f"the claude CLI could not connect to the ERP MCP server ({ERP_SERVER_NAME!r} status "
        f"{status!r})"
    )
    if status == "pending":
        # claude -p (2.1.16x+) snapshots its tools once and never waits for a slow stdio server
        return message + (
            ": the server had not finished starting when the CLI began; serve the ERP over "
            "HTTP (--harness-opt erp_transport=http)"
        )
    if transport == "stdio":
        return message + "; check the ERP stdio command"
    return message + "; check the ERP URL and token"


async def _drain(stream: asyncio.StreamReader | None, tail: list[str]) -> None:
    """Keep the last few KB of stderr (the CLI's error messages) without blocking it."""
    if stream is None:
        return
    kept = 0
    while chunk := await stream.read(4096):
        tail.append(chunk.decode("utf-8", "replace"))
        kept += len(tail[-1])
        while kept > STDERR_TAIL_CHARS and len(tail) > 1:
            kept -= len(tail.pop(0))


def _safe(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)[:60]


def _one_line(text: str) -> str:
    return " ".join(text.split())
