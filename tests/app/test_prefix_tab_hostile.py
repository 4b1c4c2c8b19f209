"""AppTest, issue 42 item 17: hostile uploads on the Capacity & cost page's Prefix cache tab. A 3,000-deep JSON array
in a 6 KB file showed a Streamlit exception box; now it is a clear message naming the file. A bad line is listed
among the rejected lines (as on the Logs page) and the rest of the trace is read; a .gz upload is inflated."""

from __future__ import annotations

import gzip
import re

from tests.app.conftest import open_page
from tests.support.hostile_traces import BAD_LINE, MOONCAKE, WHOLE_FILE, with_bad_line

N_SAMPLE = len(MOONCAKE.read_bytes().splitlines())


def _plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def _upload(app, name: str, data: bytes) -> None:
    app.selectbox(key="cap_px_trace").set_value("upload").run()
    app.file_uploader(key="cap_px_file").set_value([(name, data, "application/octet-stream")]).run()
    assert not app.exception, [e.value for e in app.exception]


def test_a_3000_deep_array_is_a_clear_message_not_an_exception_box(app):
    data, says = WHOLE_FILE["deep_array"]
    assert len(data) == 6000
    open_page("capacity", app)
    _upload(app, "deep.json", data)
    errors = [_plain(str(e.value)) for e in app.error]
    assert f"Cannot read that trace: deep.json: {says}." in errors, errors


def test_a_bad_hash_is_a_rejected_line_and_the_rest_is_read(app):
    data, reason = with_bad_line("hash_a")
    open_page("capacity", app)
    _upload(app, "team.jsonl", data)
    captions = [_plain(str(c.value)) for c in app.caption]
    assert any(c.startswith(f"team.jsonl: {N_SAMPLE - 1} requests") for c in captions), captions
    (box,) = [e for e in app.expander if "rejected" in e.label]
    assert box.label == "1 line rejected"
    table = box.dataframe[0].value
    assert table.to_dict("records") == [{"file": "team.jsonl", "line": BAD_LINE, "reason": reason}]


def test_a_gzip_upload_is_inflated_and_read_like_the_plain_trace(app):
    open_page("capacity", app)
    _upload(app, "team.jsonl.gz", gzip.compress(MOONCAKE.read_bytes()))
    captions = [_plain(str(c.value)) for c in app.caption]
    assert any(c.startswith(f"team.jsonl.gz: {N_SAMPLE} requests") for c in captions), captions
    assert not [e.label for e in app.expander if "rejected" in e.label]
