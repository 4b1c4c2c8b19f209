"""Roles from the roles file: e-mail addresses and domain patterns, an OIDC claim, the highest match wins, and a
default of "none" refuses strangers; a bad file is one sentence naming the file and the key."""

from __future__ import annotations

import pytest

from planner.auth import AuthConfigError, Role, allowed, load_roles

ROLES = """
default_role = "viewer"
[roles]
admin = ["Lead@Example.com"]
editor = ["*@platform.example.com"]
[claims]
claim = "groups"
ttft-admins = "admin"
"""


def test_email_patterns_claims_and_the_highest_role_win(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text(ROLES)
    roles = load_roles(path)
    assert roles.role_for({"email": "lead@example.com"}) is Role.ADMIN  # case-insensitive
    assert roles.role_for({"email": "dev@platform.example.com"}) is Role.EDITOR
    assert roles.role_for({"email": "dev@platform.example.com", "groups": ["x", "ttft-admins"]}) is Role.ADMIN
    assert roles.role_for({"email": "pm@elsewhere.com"}) is Role.VIEWER
    # an address the provider says is unverified does not get the role its text matches
    assert roles.role_for({"email": "lead@example.com", "email_verified": False}) is Role.VIEWER


def test_default_none_refuses_and_writes_follow_the_role(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text('default_role = "none"\n[roles]\neditor = ["dev@example.com"]\n')
    roles = load_roles(path)
    assert roles.role_for({"email": "stranger@example.org"}) is None
    editor = roles.role_for({"email": "dev@example.com"})
    assert allowed(editor, "worksheet.save") and allowed(editor, "probe.now")
    assert not allowed(editor, "endpoint.write") and not allowed(editor, "alert.write")
    assert not allowed(Role.VIEWER, "worksheet.save") and allowed(Role.ADMIN, "audit.read")
    assert not allowed(None, "worksheet.save") and not allowed(Role.ADMIN, "no.such.action")


@pytest.mark.parametrize(
    "text, named",
    [
        ('[roles]\nowner = ["a@b.c"]\n', "owner"),
        ('[roles]\nadmin = "a@b.c"\n', "[roles] admin"),
        ('default_role = "boss"\n', "default_role"),
        ("[roles\n", "cannot read"),
    ],
)
def test_a_bad_roles_file_names_the_file_and_key(tmp_path, text, named):
    path = tmp_path / "roles.toml"
    path.write_text(text)
    with pytest.raises(AuthConfigError) as err:
        load_roles(path)
    assert str(path) in str(err.value) and named in str(err.value)
