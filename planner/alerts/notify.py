"""Alert notifications: the message, the webhook bodies (generic JSON, Slack, Microsoft Teams) and e-mail (SMTP).

Secrets stay in the environment: a webhook is named by the variable holding its URL (the URL carries a token and
never appears in a message, an error or the store); SMTP comes from the SMTP_* settings (planner.settings), its
password included. Errors name the variable or the SMTP host, never the URL.

`send` fails in one way only: DeliveryError (a RuntimeError), one line, whatever went wrong underneath (a refused
URL, a timeout, a header an old rule's text would break): the CLI's `alerts test`, the Alerts page and the worker's
passes record or show that line, never a traceback.
"""

from __future__ import annotations

import os
import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import urlsplit, urlunsplit

import httpx

from planner import settings
from planner.alerts.rules import AlertKind, Rule, Transition
from planner.alerts.words import KIND_WHAT, format_value, series_where, target_words
from planner.errors import PlannerError
from planner.inputs.email_address import parse_address_list
from planner.inputs.env_names import shown_env_name
from planner.inputs.untrusted import mask_secret
from planner.inputs.urls import UrlError, check_url

__all__ = [
    "BACKOFF_S",
    "MAX_ATTEMPTS",
    "SEND_LEASE_S",
    "TIMEOUT_S",
    "DeliveryError",
    "Notice",
    "WEBHOOK_FORMATS",
    "channels_of",
    "format_value",
    "message",
    "one_line",
    "send",
    "shown_target",
]


WEBHOOK_FORMATS = ("json", "slack", "teams")
MAX_ATTEMPTS = 5
#: Wait before attempt k+1 after k failed attempts (s): 30 s, 1 min, 2 min, 4 min, then given up.
BACKOFF_S = (30.0, 60.0, 120.0, 240.0)
#: The longest one network step of a send may take (connect, one read, one write), s.
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


class DeliveryError(PlannerError, RuntimeError):
    """One notification not delivered; the message is one line naming the channel's variable, addresses or SMTP
    host, never a URL or a password."""


def _webhook_url(env_name: str) -> str:
    """The URL in variable `env_name`, checked; DeliveryError naming the variable when it is unset or unusable.

    Its origin (scheme, host, port, any user:password@) goes through planner.inputs.urls.check_url, whose message shows
    only the origin (credentials masked). Its path and query hold the webhook's token (Slack, Teams, a `?token=`): they
    are never shown, and check_url's rule against a secret in a stored query does not apply to a URL kept in the
    environment; httpx refuses a line break or another control character there (caught in _send_webhook)."""
    url = os.environ.get(env_name, "").strip()
    if not url:
        raise DeliveryError(f"the webhook variable {env_name} is not set")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise DeliveryError(f"the webhook URL in {env_name} is not a valid http(s) URL") from None
    try:
        check_url(
            urlunsplit((parts.scheme, parts.netloc, "", "", "")),
            what=f"the webhook URL in {env_name}",
            allow_credentials=True,
        )
    except UrlError as exc:
        raise DeliveryError(str(exc)) from None
    return url


def _send_webhook(env_name: str, fmt: str, n: Notice, timeout_s: float) -> None:
    url = _webhook_url(env_name)
    try:
        resp = httpx.post(url, json=webhook_body(fmt, n), timeout=timeout_s)
    except httpx.InvalidURL:
        raise DeliveryError(
            f"the webhook URL in {env_name} is not a valid URL: its path or query holds a line break or another "
            "control character"
        ) from None
    except httpx.HTTPError as exc:
        waited = f" (no answer within {timeout_s:g} s)" if isinstance(exc, httpx.TimeoutException) else ""
        raise DeliveryError(f"webhook {env_name}: {type(exc).__name__}{waited}") from None
    if resp.status_code >= 300:
        raise DeliveryError(f"webhook {env_name} answered HTTP {resp.status_code}")


def _send_email(addresses: str, n: Notice, timeout_s: float) -> None:
    host = settings.SMTP_HOST.raw()
    if not host:
        raise DeliveryError(f"{settings.SMTP_HOST.name} is not set: no SMTP server to send e-mail through")
    try:
        port = int(settings.SMTP_PORT.raw() or settings.SMTP_PORT.default)
    except ValueError:
        raise DeliveryError(f"{settings.SMTP_PORT.name} is not a port number") from None
    try:  # a rule stored before its addresses were checked at `alerts add`
        to = parse_address_list(addresses, what="e-mail recipients")
    except ValueError as exc:
        raise DeliveryError(str(exc)) from None
    msg = EmailMessage()
    msg["From"] = settings.SMTP_FROM.raw() or settings.SMTP_FROM.default
    msg["To"] = ", ".join(to)
    # one line: a header holding a line break is refused (and a name stored before names were checked may hold one)
    msg["Subject"] = " ".join((message(n).split(": ", 1)[0] + f" on {n.endpoint}").split())
    msg.set_content(message(n) + "\n")
    try:
        with smtplib.SMTP(host, port, timeout=timeout_s) as smtp:
            if (settings.SMTP_STARTTLS.raw() or "") in ("1", "true", "yes"):
                smtp.starttls()
            user = settings.SMTP_USER.raw()
            if user:
                smtp.login(user, settings.SMTP_PASSWORD.raw() or "")
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as exc:
        raise DeliveryError(f"SMTP {host}:{port}: {type(exc).__name__}: {str(exc)[:200]}") from None


def one_line(text: str) -> str:
    """`text` with every control character escaped (a line break reads as \\n): one line, whatever it held."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown_target(channel: str, target: str) -> str:
    """A channel's target as one line, for a message or the log: a webhook's variable name (hidden when an older
    version stored something else there: most likely the URL itself), addresses with control characters escaped."""
    return shown_env_name(target, sigil="") if channel == "webhook" else one_line(target)


def _without_secrets(text: str, channel: str, target: str) -> str:
    """`text` on one line with the secrets a send may have seen masked: the webhook's URL and the SMTP password."""
    secrets = [settings.SMTP_PASSWORD.raw() or ""]
    if channel == "webhook":
        secrets.append(os.environ.get(target, "").strip())
    for secret in secrets:
        text = mask_secret(text, secret)
    return one_line(text)


def send(channel: str, target: str, n: Notice, *, timeout_s: float = TIMEOUT_S) -> None:
    """Deliver one notification, each network step within `timeout_s` (s); raises DeliveryError with a one-line
    reason (never a secret, never anything else) when it fails, whatever failed."""
    try:
        if channel == "webhook":
            _send_webhook(target, n.rule.webhook_format, n, timeout_s)
        elif channel == "email":
            _send_email(target, n, timeout_s)
        else:
            raise DeliveryError(f"unknown channel {channel!r}")
    except Exception as exc:  # noqa: BLE001 - any failure of one delivery is that delivery's error, shown as such
        reason = str(exc) if isinstance(exc, DeliveryError) else f"{channel}: {type(exc).__name__}: {exc}"
        raise DeliveryError(_without_secrets(reason, channel, target)[:500]) from None
