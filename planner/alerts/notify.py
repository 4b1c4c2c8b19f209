"""Alert notifications: the message, the webhook bodies (generic JSON, Slack, Microsoft Teams) and e-mail (SMTP).

Secrets stay in the environment: a webhook is named by the variable holding its URL (the URL carries a token and
never appears in a message, an error or the store); SMTP comes from the SMTP_* settings (planner.settings), its
password included. Errors name the variable or the SMTP host, never the URL.
"""

from __future__ import annotations

import os
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import urlsplit

import httpx

from planner import settings
from planner.alerts.rules import AlertKind, Rule, Transition
from planner.alerts.words import KIND_WHAT, format_value, series_where, target_words

__all__ = [
    "BACKOFF_S",
    "MAX_ATTEMPTS",
    "SEND_LEASE_S",
    "Notice",
    "WEBHOOK_FORMATS",
    "channels_of",
    "format_value",
    "message",
    "send",
]


WEBHOOK_FORMATS = ("json", "slack", "teams")
MAX_ATTEMPTS = 5
#: Wait before attempt k+1 after k failed attempts (s): 30 s, 1 min, 2 min, 4 min, then given up.
BACKOFF_S = (30.0, 60.0, 120.0, 240.0)
TIMEOUT_S = 10.0
#: How long an evaluator holds a delivery it claimed to send (s): far longer than one send (TIMEOUT_S per network
#: step), so no other evaluator sends it meanwhile; an evaluator that died mid-send leaves it to be retried after.
SEND_LEASE_S = 300.0


@dataclass(frozen=True)
class Notice:
    """What one notification says: the transition with its numbers."""

    rule: Rule
    transition: Transition
    endpoint: str
    vantage: str
    value: float | None
    n: int
    at_ms: int
    test: bool = False  # `ttft-planner alerts test`: says so in the message

    @property
    def link(self) -> str:
        base = (settings.PUBLIC_URL.raw() or settings.PUBLIC_URL.default).rstrip("/")
        return f"{base}/probes"


def message(n: Notice) -> str:
    """One line a person can act on: what, where, the numbers with n and window, and the link."""
    r = n.rule
    head = ("TEST " if n.test else "") + ("FIRING" if n.transition is Transition.FIRING else "RESOLVED")
    where = series_where(r.kind, n.endpoint, n.vantage)
    target = f" ({target_words(r.interaction)} target)" if r.interaction else ""
    shown = format_value(r.kind, r.threshold)
    cmp = (
        f"is over {shown}{target}"
        if n.transition is Transition.FIRING
        else f"is back under {format_value(r.kind, r.clear_below)} (threshold {shown})"
    )
    counted = (AlertKind.P95_OVER, AlertKind.ERROR_RATE_OVER, AlertKind.PRODUCTION_P95_OVER)
    sample = f", n={n.n}" if r.kind in counted else ""
    return (
        f"[{head}] {r.name}: {KIND_WHAT[r.kind]} on {where} {cmp}: {format_value(r.kind, n.value)}{sample} "
        f"over the last {r.window_s / 60:g} min. {n.link}"
    )


def webhook_body(fmt: str, n: Notice) -> dict:
    text = message(n)
    if fmt == "slack":
        return {"text": text}
    if fmt == "teams":  # an Office 365 connector card (also accepted by Teams workflow webhooks)
        return {
            "@type": "MessageCard",
            "@context": "https://schema.org/extensions",
            "summary": text[:120],
            "themeColor": "D70000" if n.transition is Transition.FIRING else "2EB886",
            "text": text,
        }
    r = n.rule
    return {
        "status": str(n.transition),
        "rule": r.name,
        "kind": str(r.kind),
        "what": KIND_WHAT[r.kind],
        "endpoint": n.endpoint,
        "vantage": n.vantage,
        "value": n.value,
        "threshold": r.threshold,
        "unit": r.unit,
        "n": n.n,
        "window_s": r.window_s,
        "at_ms": n.at_ms,
        "url": n.link,
        "text": text,
    }


def channels_of(rule: Rule) -> list[tuple[str, str]]:
    """(channel, target) pairs a rule notifies: ("webhook", VARIABLE NAME) and ("email", addresses)."""
    out = []
    if rule.webhook_env:
        out.append(("webhook", rule.webhook_env))
    if rule.email_to:
        out.append(("email", rule.email_to))
    return out


def _send_webhook(env_name: str, fmt: str, n: Notice) -> None:
    url = os.environ.get(env_name, "")
    if not url:
        raise RuntimeError(f"the webhook variable {env_name} is not set")
    try:  # the URL may carry its token in the path or query (Slack, Teams): check its shape, never print it
        parts = urlsplit(url.strip())
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise RuntimeError(f"the webhook URL in {env_name} is not a valid http(s) URL")
    try:
        resp = httpx.post(url.strip(), json=webhook_body(fmt, n), timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise RuntimeError(f"webhook {env_name}: {type(exc).__name__}") from None
    if resp.status_code >= 300:
        raise RuntimeError(f"webhook {env_name} answered HTTP {resp.status_code}")


def _send_email(addresses: str, n: Notice) -> None:
    host = settings.SMTP_HOST.raw()
    if not host:
        raise RuntimeError(f"{settings.SMTP_HOST.name} is not set: no SMTP server to send e-mail through")
    try:
        port = int(settings.SMTP_PORT.raw() or settings.SMTP_PORT.default)
    except ValueError:
        raise RuntimeError(f"{settings.SMTP_PORT.name} is not a port number") from None
    msg = EmailMessage()
    msg["From"] = settings.SMTP_FROM.raw() or settings.SMTP_FROM.default
    msg["To"] = addresses
    msg["Subject"] = message(n).split(": ", 1)[0] + f" on {n.endpoint}"
    msg.set_content(message(n) + "\n")
    try:
        with smtplib.SMTP(host, port, timeout=TIMEOUT_S) as smtp:
            if (settings.SMTP_STARTTLS.raw() or "") in ("1", "true", "yes"):
                smtp.starttls()
            user = settings.SMTP_USER.raw()
            if user:
                smtp.login(user, settings.SMTP_PASSWORD.raw() or "")
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise RuntimeError(f"SMTP {host}:{port}: {type(exc).__name__}: {str(exc)[:200]}") from None


def send(channel: str, target: str, n: Notice) -> None:
    """Deliver one notification; raises RuntimeError with a one-line reason (never a secret) when it fails."""
    if channel == "webhook":
        _send_webhook(target, n.rule.webhook_format, n)
    elif channel == "email":
        _send_email(target, n)
    else:
        raise RuntimeError(f"unknown channel {channel!r}")
