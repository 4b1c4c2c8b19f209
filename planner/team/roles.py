"""Roles for a shared deployment: who may read, who may write, who may administer. Pure data, no Streamlit.

Sign-in itself is Streamlit's OpenID Connect (`st.login`, configured by an `[auth]` section in
`.streamlit/secrets.toml`: Google, Microsoft Entra, Okta, Keycloak, any OIDC provider). It is off by default: with no
`[auth]` section the dashboard is a single-user laptop tool and whoever opens it may do everything. With it, every
page needs sign-in and the role of the signed-in user comes from a small roles file (TOML, path in the
ROLES_FILE setting, default `.streamlit/roles.toml`):

    default_role = "viewer"            # anyone who signs in and matches nothing below ("none" refuses them)
    trust_unverified_email = false     # true: a provider that never sends email_verified (see below)
    [roles]
    admin = ["lead@example.com"]
    editor = ["*@platform.example.com"]  # a whole domain
    [claims]                           # an OIDC claim (e.g. groups from Okta / Entra) → role
    claim = "groups"
    ttft-admins = "admin"
    ttft-editors = "editor"

The highest role that matches wins. Roles nest: an admin may do what an editor may, an editor what a viewer may.

An e-mail rule (an address or a domain) matches only an address the provider vouches for: the ID token's
`email_verified` claim must be the boolean `true`. A string (`"false"`, even `"true"`), a number or `false` is not
verified, and neither is a missing claim, unless the roles file says `trust_unverified_email = true` (for a provider
that never sends the claim and lets nobody choose their own address). The `email` must be one address: with two `@`
(`admin@example.com@evil.com`) it matches no rule. An unverified or malformed address still signs in, with the role
its claims give or the default role.

Streamlit's sign-in always comes back to the home page. The link a signed-out visitor opened (a page and its query:
a shared worksheet carries all its inputs and provenance there) travels through the provider's round trip in a
short-lived cookie (`RETURN_COOKIE`), and is read back only as one of the dashboard's own pages with a query
(`parse_return_cookie`): it can never send anyone off the dashboard.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from planner import settings
from planner.errors import PlannerError
from planner.inputs.email_address import is_address

__all__ = [
    "ACTIONS",
    "ACTION_WORDS",
    "RETURN_COOKIE",
    "RETURN_COOKIE_MAX_AGE_S",
    "RETURN_MAX_CHARS",
    "AuthConfigError",
    "Role",
    "RolesConfig",
    "allowed",
    "load_roles",
    "parse_return_cookie",
    "refusal",
]


class Role(StrEnum):
    VIEWER = "viewer"  # PMs: read every page, download reports
    EDITOR = "editor"  # leads: worksheets, uploads, probe now, cold readings
    ADMIN = "admin"  # endpoints, regions, alerts, deleting data


_RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}

#: Every write the dashboard can make → the least role allowed to make it (checked where the write happens).
ACTIONS: dict[str, Role] = {
    "worksheet.save": Role.EDITOR,
    "worksheet.delete": Role.ADMIN,
    "logs.upload": Role.EDITOR,
    "logs.delete": Role.ADMIN,
    "probe.now": Role.EDITOR,
    "cold.request": Role.EDITOR,
    "rtt.measure": Role.EDITOR,
    "endpoint.write": Role.ADMIN,
    "region.write": Role.ADMIN,
    "alert.write": Role.ADMIN,
    "source.write": Role.ADMIN,
    "source.sync": Role.EDITOR,
    "audit.read": Role.ADMIN,
}

#: Each action in plain words, as the Admin page and the audit log show it (the codes stay what the store keeps).
ACTION_WORDS: dict[str, str] = {
    "worksheet.save": "Save a worksheet",
    "worksheet.delete": "Delete a saved worksheet",
    "logs.upload": "Save an uploaded request log",
    "logs.delete": "Delete a stored request log",
    "probe.now": "Probe an endpoint now",
    "cold.request": "Request a cold reading",
    "rtt.measure": "Measure region RTT",
    "endpoint.write": "Add, edit or remove an endpoint",
    "region.write": "Add or remove a region",
    "alert.write": "Add or delete an alert rule",
    "source.write": "Add or remove a live source",
    "source.sync": "Test or sync a live source",
    "audit.read": "Read the audit log",
}


class AuthConfigError(PlannerError, ValueError):
    """A roles file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class RolesConfig:
    default_role: Role | None = Role.VIEWER  # None: people who match nothing are refused
    emails: Mapping[Role, tuple[str, ...]] = field(default_factory=dict)  # patterns, fnmatch-style, lower case
    claim: str = ""
    claim_roles: Mapping[str, Role] = field(default_factory=dict)
    trust_unverified_email: bool = False  # a missing email_verified claim counts as verified

    def role_for(self, user: Mapping[str, Any]) -> Role | None:
        """The highest role the signed-in user's verified email or claim gives, else the default (None: refused)."""
        found: list[Role] = []
        email = self.verified_email(user)
        if email:
            found += [
                role for role, patterns in self.emails.items() if any(fnmatch.fnmatchcase(email, p) for p in patterns)
            ]
        if self.claim:
            values = user.get(self.claim)
            values = values if isinstance(values, list | tuple) else [values]
            found += [self.claim_roles[str(v)] for v in values if str(v) in self.claim_roles]
        if found:
            return max(found, key=_RANK.__getitem__)
        return self.default_role

    def verified_email(self, user: Mapping[str, Any]) -> str:
        """The user's e-mail in lower case when the roles may be matched against it, else "": one address (exactly
        one @) that the provider verified (`email_verified` is the boolean true; a missing or null claim only with
        trust_unverified_email)."""
        verified = user.get("email_verified")
        if verified is not True and not (verified is None and self.trust_unverified_email):
            return ""
        email = user.get("email")
        if not isinstance(email, str):
            return ""
        email = email.strip().lower()
        return email if is_address(email) else ""


def _role(value: Any, where: str) -> Role:
    try:
        return Role(str(value))
    except ValueError:
        raise AuthConfigError(f"{where}: {value!r} is not a role (viewer, editor or admin)") from None


def load_roles(path: Path | None = None) -> RolesConfig:
    """The roles file (TTFT_PLANNER_ROLES_FILE, else .streamlit/roles.toml); missing file → everyone a viewer."""
    path = path or Path(settings.ROLES_FILE.raw() or settings.ROLES_FILE.default)
    if not path.exists():
        return RolesConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AuthConfigError(f"{path}: cannot read the roles file: {exc}") from None
    default = data.get("default_role", "viewer")
    emails: dict[Role, tuple[str, ...]] = {}
    for role, patterns in (data.get("roles") or {}).items():
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise AuthConfigError(f"{path}: [roles] {role} must be a list of e-mail addresses or patterns")
        emails[_role(role, f"{path}: [roles]")] = tuple(p.strip().lower() for p in patterns)
    claims = dict(data.get("claims") or {})
    claim = str(claims.pop("claim", ""))
    claim_roles = {str(k): _role(v, f"{path}: [claims] {k}") for k, v in claims.items()}
    trust = data.get("trust_unverified_email", False)
    if not isinstance(trust, bool):
        raise AuthConfigError(f"{path}: trust_unverified_email must be true or false, got {trust!r}")
    return RolesConfig(
        default_role=None if default == "none" else _role(default, f"{path}: default_role"),
        emails=emails,
        claim=claim,
        claim_roles=claim_roles,
        trust_unverified_email=trust,
    )


def allowed(role: Role | None, action: str) -> bool:
    """May `role` make the write `action` (a key of ACTIONS)? Unknown actions are refused."""
    need = ACTIONS.get(action)
    return role is not None and need is not None and _RANK[role] >= _RANK[need]


def refusal(role: Role | None, action: str) -> str:
    """The sentence shown when a write is refused."""
    need = ACTIONS.get(action, Role.ADMIN)
    who = f"Your role ({role})" if role else "Signing in"
    return f"{who} does not allow this: it needs the {need} role. Ask an admin of this dashboard."


#: The cookie that carries the link a signed-out visitor opened through the sign-in round trip (the browser writes
#: it: `page?query` below the app's base, percent-encoded), its lifetime (s): long enough to sign in at the provider,
#: short enough that an abandoned sign-in does not steer a later one, and its longest value (a browser keeps about
#: 4 KB per cookie, name and attributes included; a longer link is not kept).
RETURN_COOKIE = "ttft_return_to"
RETURN_COOKIE_MAX_AGE_S = 900
RETURN_MAX_CHARS = 3800
_RETURN_MAX_PARAMS = 100
_EMBED_PARAMS = frozenset({"embed", "embed_options"})  # Streamlit keeps these itself on every page switch


def parse_return_cookie(value: str, url_paths: Collection[str]) -> tuple[str, dict[str, list[str]]] | None:
    """The page and query the return cookie names: (url_path, {name: [values]}), the path exactly one of
    `url_paths` ("" is the home page), repeated parameters kept in order. None for anything else (an unknown page,
    a path with a scheme, host or slash, a malformed or oversized value), so what the cookie says is only ever looked
    up among the dashboard's own pages and never becomes a redirect.
    """
    if not value or len(value) > RETURN_MAX_CHARS:
        return None
    path, _, query = unquote(value).partition("?")
    if path not in url_paths:
        return None
    try:
        pairs = parse_qsl(query, keep_blank_values=True, max_num_fields=_RETURN_MAX_PARAMS)
    except ValueError:
        return None
    params: dict[str, list[str]] = {}
    for k, v in pairs:
        if k.lower() not in _EMBED_PARAMS:
            params.setdefault(k, []).append(v)
    return path, params
