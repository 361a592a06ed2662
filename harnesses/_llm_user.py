"""An LLM user for conversations (``--user chat:MODEL`` or ``--user anthropic:MODEL``), on the
same wire clients as the harnesses (the OpenAI SDK's Chat Completions, the Anthropic SDK's
Messages), with tau2-bench's rules: never invent facts, disclose progressively and only when
asked, agreeing is not done, end only with a closed stop signal. The model and the prompt's hash
are pinned in every conversation record (``user_version``) and the run's manifest (``user``).

The rules reviewer (``review_user``) checks its turns like the scripted user's.
"""

from __future__ import annotations

import hashlib
import os

from harnesses._conversation import OUT_OF_SCOPE, SIGNALS, STOP, TRANSFER, UserReply
from ledgerbench_core.dataset import Conversation

USER_RULES = f"""You play a person contacting a company's finance team, following the scenario
below. Rules:
- Never invent information: every fact you state (names, numbers, ids, dates) must come from the
  scenario. If you are asked for something the scenario does not give, say you do not know.
- Disclose progressively: answer only what the agent asks, one fact at a time; never volunteer the
  facts you hold before you are asked for them. Never state anything from "What you do not know".
- Agreeing is not done: end the conversation only when the agent has given you a concrete answer
  (figures, dates or ids) to your request and to each of your follow-up questions.
- Ask your follow-up questions, in order, once the agent has answered your request.
- Write short, plain messages, as a busy professional would. Do not repeat these instructions.
- When you have everything you came for, write {STOP} at the end of your message. If the agent
  transfers you to a human, write {TRANSFER}. If the scenario does not let you go on, write
  {OUT_OF_SCOPE}. Use no other way to end."""


def scenario_prompt(scenario: Conversation) -> str:
    """The system prompt for one scenario: the rules, then the scenario as text."""
    known = "\n".join(f"- {slot.name}: {slot.answer}" for slot in scenario.known_info)
    unknown = "\n".join(f"- {info.name.replace('_', ' ')}" for info in scenario.unknown_info)
    follow = "\n".join(f"- {f.message}" for f in scenario.follow_ups) or "- (none)"
    return (
        f"{USER_RULES}\n\nScenario\nWho you are: {scenario.persona}\n"
        f"You opened with: {scenario.opening_message}\n"
        f"What you know (say each only when asked for it):\n{known}\n"
        f"What you do not know:\n{unknown or '- (nothing listed)'}\n"
        f"Your follow-up questions:\n{follow}"
    )


def prompt_hash() -> str:
    return hashlib.sha256(USER_RULES.encode()).hexdigest()[:12]


class UserModelError(RuntimeError):
    """The user model could not be used (unreachable, refused, no reply)."""


class LlmUser:
    """A simulated user played by a model over Chat Completions or Messages."""

    def __init__(
        self, spec: str, scenario: Conversation, base_url: str | None = None, timeout: float = 60
    ) -> None:
        self.api, _, self.model = spec.partition(":")
        if self.api not in ("chat", "anthropic") or not self.model:
            raise ValueError(
                f"--user {spec}: use scripted, chat:MODEL (Chat Completions) or anthropic:MODEL"
            )
        self.scenario = scenario
        self.base_url = base_url
        self.timeout = timeout
        self.system = scenario_prompt(scenario)
        self.name = f"{self.api}:{self.model}"
        self.version = f"{self.name}@prompt-{prompt_hash()}"
        self.transcript: list[dict[str, str]] = [
            {"role": "assistant", "content": scenario.opening_message}
        ]

    def opening(self) -> str:
        return self.scenario.opening_message

    async def respond(self, agent_message: str) -> UserReply:
        """The user's next message (the agent's messages are the model's ``user`` turns)."""
        self.transcript.append({"role": "user", "content": agent_message or "(no message)"})
        text = await complete(self.api, self.model, self.base_url, self.system, self.transcript)
        self.transcript.append({"role": "assistant", "content": text})
        signal = next((kind for token, kind in SIGNALS.items() if token in text), None)
        return UserReply(text.strip(), signal)


async def complete(
    api: str,
    model: str,
    base_url: str | None,
    system: str,
    messages: list[dict[str, str]],
    max_tokens: int = 400,
) -> str:
    """One reply of the user model; :class:`UserModelError` when it cannot be had."""
    try:
        if api == "anthropic":
            from anthropic import AsyncAnthropic

            key = os.environ.get("ANTHROPIC_API_KEY", "")
            async with AsyncAnthropic(api_key=key, base_url=base_url, max_retries=2) as client:
                reply = await client.messages.create(
                    model=model, system=system, messages=messages, max_tokens=max_tokens
                )
            return "".join(getattr(block, "text", "") for block in reply.content)
        from openai import AsyncOpenAI

        key = os.environ.get("OPENAI_API_KEY", "")
        async with AsyncOpenAI(api_key=key, base_url=base_url, max_retries=2) as client:
            reply = await client.chat.completions.create(
                model=model, messages=[{"role": "system", "content": system}, *messages]
            )
        return reply.choices[0].message.content or ""
    except Exception as error:  # any SDK failure: the user, not the agent, failed
        message = " ".join(str(error).split())[:200]
        raise UserModelError(f"{type(error).__name__}: {message}") from None


async def preflight(
    spec: str, base_url: str | None, flag: str = "--user", role: str = "user model"
) -> str | None:
    """One line when the user model (or, with ``flag``/``role``, the reviewer model) cannot be
    reached (checked before the run writes anything), else None."""
    api, _, model = spec.partition(":")
    variable = "ANTHROPIC_API_KEY" if api == "anthropic" else "OPENAI_API_KEY"
    if not os.environ.get(variable):
        return f"{flag} {spec}: set {variable} for the {role}"
    try:
        await complete(
            api, model, base_url, "Reply with OK.", [{"role": "user", "content": "Hi"}], 5
        )
    except UserModelError as error:
        where = base_url or "the provider's default endpoint"
        return f"{flag} {spec}: the {role} at {where} cannot be used ({error})"
    return None
