"""AppTest: a saved worksheet exports under its saved name, titled without "(edited, not saved)"; an edit after the
save says so again."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import app_test


class _Kept(MemoryMediaFileStorage):
    """The media storage of the latest AppTest run, kept so a test can read what a download button serves."""

    last: MemoryMediaFileStorage | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _Kept.last = self


@pytest.fixture
def served(monkeypatch):
    """served(at, key) → (file name, text) that the download button `key` offers after the latest run."""
    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", _Kept)

    def get(at, key: str) -> tuple[str, str]:
        button = next(b for b in at.get("download_button") if b.proto.id.endswith(key))
        file_id = button.proto.url.rsplit("/", 1)[1].split(".")[0]
        assert _Kept.last is not None
        f = _Kept.last.get_file(file_id)
        return f.filename or "", f.content.decode()

    return get


def test_a_saved_worksheet_exports_under_its_name_and_an_edit_says_so(app, served):
    app.run()
    app.text_input(key="save_name").set_value("chat panel").run()
    app.button(key="save").click().run()
    assert any("Saved" in s.value for s in app.success)
    name, text = served(app, "dl_md")  # the very run that saved: what a click on Markdown downloads now
    assert name == "chat-panel.md"
    assert text.splitlines()[0] == "# TTFT worksheet: chat panel"
    assert served(app, "dl_json")[0] == "chat-panel.json"
    app.run()  # an unrelated rerun changes nothing
    assert served(app, "dl_md")[1].splitlines()[0] == "# TTFT worksheet: chat panel"
    app.number_input(key="queue_ms").set_value(120).run()
    name, text = served(app, "dl_md")
    assert name == "chat-panel.md" and text.splitlines()[0] == "# TTFT worksheet: chat panel (edited, not saved)"
