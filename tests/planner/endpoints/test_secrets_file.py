"""API keys from Streamlit's secrets file, for the worker and the CLI (never from the database)."""

import pytest

from planner.endpoints.registry import key_status
from planner.probes.errors import MissingApiKey
from planner.probes.ttft import ProbeTarget, resolve_api_key
from planner.store.endpoints import EndpointRow


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACME_KEY", raising=False)
    (tmp_path / ".streamlit").mkdir()
    return tmp_path


def test_a_key_in_the_project_secrets_file_is_found(project):
    (project / ".streamlit" / "secrets.toml").write_text('ACME_KEY = "sk-from-file"\n')
    assert resolve_api_key(ProbeTarget(base_url="http://x/v1", model="m", api_key_env="ACME_KEY")) == "sk-from-file"
    row = EndpointRow(
        name="a", base_url="http://x/v1", model="m", api_key_env="ACME_KEY", created_at_ms=0, updated_at_ms=0
    )
    assert key_status(row) == "key set"


def test_the_environment_wins_over_the_file(project, monkeypatch):
    (project / ".streamlit" / "secrets.toml").write_text('ACME_KEY = "sk-from-file"\n')
    monkeypatch.setenv("ACME_KEY", "sk-from-env")
    assert resolve_api_key(ProbeTarget(base_url="http://x/v1", model="m", api_key_env="ACME_KEY")) == "sk-from-env"


def test_missing_everywhere_names_the_variable_not_a_value(project):
    (project / ".streamlit" / "secrets.toml").write_text('OTHER = "sk-secret-value"\n')
    with pytest.raises(MissingApiKey) as info:
        resolve_api_key(ProbeTarget(base_url="http://x/v1", model="m", api_key_env="ACME_KEY"))
    assert "ACME_KEY" in str(info.value) and "sk-secret-value" not in str(info.value)
    row = EndpointRow(
        name="a", base_url="http://x/v1", model="m", api_key_env="ACME_KEY", created_at_ms=0, updated_at_ms=0
    )
    assert key_status(row) == "key missing"


def test_a_broken_secrets_file_reads_as_no_key(project):
    (project / ".streamlit" / "secrets.toml").write_text("ACME_KEY = [unclosed\n")
    row = EndpointRow(
        name="a", base_url="http://x/v1", model="m", api_key_env="ACME_KEY", created_at_ms=0, updated_at_ms=0
    )
    assert key_status(row) == "key missing"
