"""The NAME of an environment variable, typed where a secret's name goes: an endpoint's `api_key_env` (and
`--api-key-env`), a source's variable (`--litellm-dsn-env`, `--otlp-token-env`, `--prometheus-token-env`), an alert
rule's webhook variable. One check for all of them, on the command line, the pages and the store's add functions.

A name is `[A-Za-z_][A-Za-z0-9_]*`, at most MAX_ENV_NAME_CHARS long (the shortest column that keeps one). A value
that is refused is never echoed — what was typed there is most likely the secret itself (a database URL, `Bearer
sk-…`) — and neither is one shaped like a token though its characters would do for a name: a run of 16 or more
letters and digits mixed (`ghp_` + 36 random characters, an AWS key id, `hf_…`), which no variable's name holds.
"""

from __future__ import annotations

import os
import re

from planner.errors import PlannerError
from planner.inputs.urls import mask_credential

__all__ = [
    "MAX_ENV_NAME_CHARS",
    "EnvNameError",
    "check_env_name",
    "env_name_problem",
    "mask_env_value",
    "shown_env_name",
]

MAX_ENV_NAME_CHARS = 120  # endpoint.api_key_env and alert_rule.webhook_env keep 120; source.secret_ref 200
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# 16+ letters and digits, both present, between underscores: a random token's body, not a word of a name
_TOKEN_RUN = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{16,}")


class EnvNameError(PlannerError, ValueError):
    """A value typed where an environment variable's NAME goes; the message names the field, never the value."""


def env_name_problem(value: str, what: str) -> str | None:
    """Why `value` (surrounding spaces ignored) is not a variable's name, as a sentence starting with `what` (the
    field: '--litellm-dsn-env', 'api_key_env') that never quotes it; None for a name. '' is a problem too: callers
    where a name is optional check for '' first."""
    name = value.strip() if isinstance(value, str) else ""
    rule, why = f"letters, digits, _; at most {MAX_ENV_NAME_CHARS} characters", ""
    if _NAME.fullmatch(name) and len(name) <= MAX_ENV_NAME_CHARS:
        if not _TOKEN_RUN.search(name):
            return None
        why = " (it looks like a token)"
    tail = "the value you gave was not stored or shown"
    return f"{what} must be the NAME of an environment variable ({rule}), not its value{why}: {tail}"


def check_env_name(value: str, what: str, *, optional: bool = False) -> str:
    """`value` without surrounding spaces when it is a variable's name ('' too where `optional`); raises EnvNameError
    (a ValueError) with env_name_problem's sentence otherwise."""
    name = value.strip() if isinstance(value, str) else value
    if optional and name == "":
        return ""
    problem = env_name_problem(value, what)
    if problem is not None:
        raise EnvNameError(problem)
    return name


def shown_env_name(value: str, sigil: str = "$") -> str:
    """`$NAME` (`sigil` + the name) for a stored variable's name, for a message or a table; a stored value that is no
    name (kept by an older version that did not check: most likely the secret itself) is never shown."""
    if env_name_problem(value, "") is None:
        return f"{sigil}{value.strip()}"
    return "(not a variable's name: hidden; remove this and add it again with the variable's NAME)"


def mask_env_value(text: str, name: str) -> str:
    """`text` with the value of the environment variable `name` (a database URL, a token) masked whole and, for a
    URL, each credential it carries (planner.inputs.urls.mask_credential): a message from a driver or a server may quote
    it. Where `name` is no variable's name (kept by an older version that did not check: most likely the secret
    itself, which a message such as "$… is not set" then quotes), `name` is what is masked."""
    if not name:
        return text
    if env_name_problem(name, "") is not None:
        return mask_credential(text, name)
    return mask_credential(text, os.environ.get(name.strip()))
