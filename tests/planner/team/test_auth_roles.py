"""Roles from the roles file: e-mail addresses and domain patterns, an OIDC claim, the highest match wins, and a
default of "none" refuses strangers; a bad file is one sentence naming the file and the key."""

from __future__ import annotations

import pytest

from planner.team.roles import AuthConfigError, Role, allowed, load_roles

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
    assert roles.role_for(_verified("lead@example.com")) is Role.ADMIN  # case-insensitive
    assert roles.role_for(_verified("dev@platform.example.com")) is Role.EDITOR
    assert roles.role_for({**_verified("dev@platform.example.com"), "groups": ["x", "ttft-admins"]}) is Role.ADMIN
    assert roles.role_for(_verified("pm@elsewhere.com")) is Role.VIEWER
    # an address the provider says is unverified does not get the role its text matches
    assert roles.role_for({"email": "lead@example.com", "email_verified": False}) is Role.VIEWER


def _verified(email: str) -> dict:
    return {"email": email, "email_verified": True}


@pytest.mark.parametrize("verified", ["false", "False", "0", "true", 1, 0, None, "", [], {}])
def test_only_a_boolean_true_verifies_an_address(tmp_path, verified):
    # some providers send the claim as a string: "false" is not a verification (it was: it is not the value False)
    path = tmp_path / "roles.toml"
    path.write_text(ROLES)
    roles = load_roles(path)
    assert roles.role_for({"email": "lead@example.com", "email_verified": verified}) is Role.VIEWER
    assert roles.role_for({"email": "dev@platform.example.com", "email_verified": verified}) is Role.VIEWER
    # a group claim does not depend on the e-mail's verification
    assert roles.role_for({"email": "x@y.z", "email_verified": verified, "groups": ["ttft-admins"]}) is Role.ADMIN


def test_a_missing_claim_is_unverified_unless_the_roles_file_trusts_the_provider(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text(ROLES)
    assert load_roles(path).role_for({"email": "lead@example.com"}) is Role.VIEWER
    path.write_text("trust_unverified_email = true\n" + ROLES)
    trusting = load_roles(path)
    assert trusting.role_for({"email": "lead@example.com"}) is Role.ADMIN
    # trusting a provider that never sends the claim is not trusting one that says "not verified"
    assert trusting.role_for({"email": "lead@example.com", "email_verified": False}) is Role.VIEWER
    assert trusting.role_for({"email": "lead@example.com", "email_verified": "false"}) is Role.VIEWER


@pytest.mark.parametrize(
    "email",
    [
        "lead@example.com@evil.com",
        "a@b@platform.example.com",
        "evil.com@lead@example.com",
        "lead\n@example.com",
        " lead @example.com",
        "lead@example.com, x@platform.example.com",
        "@platform.example.com",
    ],
)
def test_an_address_with_two_at_signs_or_stray_characters_matches_no_rule(tmp_path, email):
    path = tmp_path / "roles.toml"
    path.write_text(
        'default_role = "none"\n[roles]\nadmin = ["lead@example.com", "*@example.com@evil.com"]\n'
        'editor = ["*@platform.example.com"]\n'
    )
    assert load_roles(path).role_for(_verified(email)) is None


def test_default_none_refuses_and_writes_follow_the_role(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text('default_role = "none"\n[roles]\neditor = ["dev@example.com"]\n')
    roles = load_roles(path)
    assert roles.role_for({"email": "stranger@example.org"}) is None
    editor = roles.role_for(_verified("dev@example.com"))
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
        ('trust_unverified_email = "yes"\n', "trust_unverified_email"),
        ("[roles\n", "cannot read"),
    ],
)
def test_a_bad_roles_file_names_the_file_and_key(tmp_path, text, named):
    path = tmp_path / "roles.toml"
    path.write_text(text)
    with pytest.raises(AuthConfigError) as err:
        load_roles(path)
    assert str(path) in str(err.value) and named in str(err.value)
