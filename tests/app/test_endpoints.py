"""AppTest: the Endpoints view — add (with validation messages), key status, the warm-by-probing note, edit, remove."""

from __future__ import annotations

from planner.endpoints.registry import add_endpoint, list_endpoints
from planner.store import open_store
from tests.app.conftest import open_page


def _fill(at, **values):
    for k, v in values.items():
        widget = {"interval": at.number_input, "timeout": at.number_input, "window": at.number_input}.get(
            k, at.text_input
        )
        widget(key=f"add_{k}").set_value(v)
    [b for b in at.button if b.label == "Add endpoint"][0].click().run()
    assert not at.exception, at.exception


def test_add_an_endpoint_shows_it_with_key_missing(monkeypatch):
    monkeypatch.delenv("ACME_KEY_FOR_TEST", raising=False)
    at = open_page("endpoints")
    assert any("No endpoints yet" in i.value for i in at.info)
    # the worker's own account (planner.store.worker_state)
    assert any("No worker is probing" in w.value for w in at.warning)
    _fill(at, name="acme-eu", base_url="https://api.acme.example/v1", model="llama-3.1-8b", key="ACME_KEY_FOR_TEST")
    table = at.dataframe[0].value
    row = table[table["Name"] == "acme-eu"].iloc[0]
    assert row["Status"] == "key missing" and row["Key env var"] == "ACME_KEY_FOR_TEST"
    assert row["Interval (s)"] == "60"
    assert any(s.value.startswith("Added acme-eu") for s in at.success)
    assert at.text_input(key="add_name").value == ""  # the form is ready for the next one
    [e] = list_endpoints(open_store())
    assert (e.base_url, e.api_key_env) == ("https://api.acme.example/v1", "ACME_KEY_FOR_TEST")


def test_bad_input_is_refused_with_the_field_named_and_nothing_stored():
    at = open_page("endpoints")
    _fill(at, name="x", base_url="ftp://files.example/v1", model="m")
    assert any("Base URL" in e.value and "http://" in e.value for e in at.error)
    _fill(at, name="x", base_url="https://ok.example/v1", model="m", interval=2.0, timeout=1.0)
    assert any("Probe interval" in e.value and "at least 10" in e.value for e in at.error)
    _fill(at, name="x", base_url="https://ok.example/v1", model="m", interval=20.0, timeout=25.0)
    assert any(e.value == "Timeout (25 s) must be shorter than Probe interval (20 s)" for e in at.error)
    assert not any("_s" in e.value for e in at.error)  # no internal names
    assert list_endpoints(open_store()) == []


def test_duplicate_name_is_refused():
    add_endpoint(open_store(), {"name": "dup", "base_url": "https://a.example/v1", "model": "m"})
    at = open_page("endpoints")
    _fill(at, name="dup", base_url="https://b.example/v1", model="m")
    assert any("already exists" in e.value for e in at.error)
    assert [e.base_url for e in list_endpoints(open_store())] == ["https://a.example/v1"]


def test_probing_faster_than_the_scale_down_window_is_flagged():
    add_endpoint(
        open_store(),
        {"name": "hf", "base_url": "https://hf.example/v1", "model": "m", "interval_s": 60, "scale_down_window_s": 900},
    )
    at = open_page("endpoints")
    assert any("keep them warm" in i.value and "hf" in i.value for i in at.info)


def test_edit_and_remove():
    add_endpoint(open_store(), {"name": "old", "base_url": "https://a.example/v1", "model": "m"})
    at = open_page("endpoints")
    e = list_endpoints(open_store())[0]
    at.number_input(key=f"edit{e.id}_interval").set_value(120.0)
    [b for b in at.button if b.label == "Save changes"][0].click().run()
    assert list_endpoints(open_store())[0].interval_s == 120.0
    assert any(s.value == "Saved old." for s in at.success)
    [b for b in at.button if b.label.startswith("Remove endpoint")][0].click().run()
    assert not at.exception, at.exception
    assert any("Tick" in w.value for w in at.warning) and len(list_endpoints(open_store())) == 1  # asks first
    at.checkbox(key=f"edit{e.id}_sure").check()
    [b for b in at.button if b.label.startswith("Remove endpoint")][0].click().run()
    assert not at.exception, at.exception
    assert list_endpoints(open_store()) == []
    assert any(s.value == "Removed old and its samples." for s in at.success)


def test_toml_import_refreshes_the_table_and_says_what_it_did():
    at = open_page("endpoints")
    toml = (
        b'[[endpoint]]\nname = "from-git"\nbase_url = "https://git.example/v1"\nmodel = "m"\n\n'
        b'[[endpoint]]\nname = "broken"\nbase_url = "ftp://x.example"\nmodel = "m"\n'
    )
    at.file_uploader(key="endpoints_import").set_value([("endpoints.toml", toml, "application/toml")]).run()
    at.button(key="endpoints_do_import").click().run()
    assert not at.exception, at.exception
    assert any(s.value == "Imported endpoints.toml: added 1, updated 0, rejected 1." for s in at.success)
    assert any("broken" in e.value and "Base URL" in e.value for e in at.error)
    assert at.dataframe[0].value["Name"].tolist() == ["from-git"]  # the table above is not stale


def test_catalog_picker_fills_the_form_and_shows_the_key_variable(monkeypatch):
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_RESOURCE", raising=False)
    monkeypatch.setenv("GROQ_API_KEY", "gsk_value_never_shown")
    at = open_page("endpoints")
    at.selectbox(key="cat_provider").set_value("groq").run()
    assert any("`GROQ_API_KEY`: **present**" in c.value for c in at.caption)
    at.selectbox(key="cat_provider").set_value("azure-openai").run()
    assert any("`AZURE_OPENAI_API_KEY`: **missing**" in c.value for c in at.caption)
    at.selectbox(key="cat_region").set_value("westeurope").run()
    at.button(key="cat_fill").click().run()
    assert any("needs {resource}" in e.value for e in at.error)  # no resource name yet: said, nothing filled
    at.text_input(key="cat_param_azure-openai_resource").set_value("acme-we").run()
    at.button(key="cat_fill").click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="add_base_url").value == (
        "https://acme-we.openai.azure.com/openai/deployments/gpt-4o-mini?api-version=2024-10-21"
    )
    assert at.selectbox(key="add_protocol").value == "azure-openai"
    assert (at.text_input(key="add_key").value, at.text_input(key="add_region").value) == (
        "AZURE_OPENAI_API_KEY",
        "westeurope",
    )
    [b for b in at.button if b.label == "Add endpoint"][0].click().run()
    [e] = list_endpoints(open_store())
    assert (e.name, e.provider, e.protocol) == ("azure-openai-gpt-4o-mini-westeurope", "Azure OpenAI", "azure-openai")
    assert not any("gsk_value_never_shown" in str(el.value) for el in [*at.caption, *at.markdown, *at.success])


def test_the_forms_range_messages_are_the_shared_rules_in_the_forms_words():
    """Issue 28: the Endpoints form checks its numbers by the rules every other entry point uses
    (planner.inputs.validate), so the page and the CLI cannot disagree about a range; the message names the field as the
    form labels it."""
    from planner.inputs.validate import PROBE_TIMEOUT_S, SCALE_DOWN_WINDOW_S

    at = open_page("endpoints")
    # the inputs' bounds are the rules' (issue 44: ttft_planner_app.widgets.number_input_for) ...
    for key, rule in (("add_timeout", PROBE_TIMEOUT_S), ("add_window", SCALE_DOWN_WINDOW_S)):
        assert (at.number_input(key=key).min, at.number_input(key=key).max) == (rule.lo, rule.hi)
    # ... and a value the widget lets through but the rule refuses (an open end) is named in the form's words
    _fill(at, name="x", base_url="https://ok.example/v1", model="m", interval=7000.0, timeout=0.0)
    assert [e.value for e in at.error] == [f"Timeout {PROBE_TIMEOUT_S.problem(0, '0')}"]
    assert at.error[0].value == "Timeout must be a number greater than 0 and at most 3,600 s, got 0"
    assert list_endpoints(open_store()) == []


def test_the_protocol_choices_are_the_stored_spellings():
    from tests.planner.test_vocabularies import STORED_PROTOCOLS

    at = open_page("endpoints")
    protocol = at.selectbox(key="add_protocol")
    assert tuple(protocol.options) == STORED_PROTOCOLS and protocol.value == "openai-chat"
