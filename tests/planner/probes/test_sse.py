"""The SSE parser on the byte sequences real LLM streams produce (pure, no network)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.probes.sse import SseEvent, SseParser


def feed_all(parser: SseParser, *chunks: bytes) -> list[SseEvent]:
    out: list[SseEvent] = []
    for c in chunks:
        out += parser.feed(c)
    return out


def test_data_with_and_without_space_give_the_same_payload():
    events = feed_all(SseParser(), b'data: {"a":1}\n\ndata:{"a":1}\n\n')
    assert [e.data for e in events] == ['{"a":1}', '{"a":1}']


def test_comment_pings_are_counted_not_dispatched():
    p = SseParser()
    events = feed_all(p, b": ping - 2025-01-01 00:00:00\n\n:\n\ndata: x\n\n")
    assert [e.data for e in events] == ["x"]
    assert p.comments == 2


def test_one_event_split_across_reads_is_dispatched_by_the_read_that_completes_it():
    p = SseParser()
    assert p.feed(b'data: {"choices":[{"delta":') == []
    assert p.feed(b'{"content":"hi"}}]}\n') == []
    assert p.has_partial_event
    events = p.feed(b"\n")
    assert json.loads(events[0].data)["choices"][0]["delta"]["content"] == "hi"
    assert not p.has_partial_event


def test_several_events_in_one_read_come_out_in_order():
    events = SseParser().feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n")
    assert [e.data for e in events] == ["1", "2", "3"]


def test_crlf_split_between_reads_is_one_line_end():
    p = SseParser()
    assert p.feed(b"data: a\r") == []
    assert [e.data for e in p.feed(b"\n\r")] == ["a"]  # dispatched by the CR, without waiting for the next read
    events = p.feed(b"\ndata: b\r\n\r\n")
    assert [e.data for e in events] == ["b"]


def test_bare_cr_line_ends_work():
    assert [e.data for e in SseParser().feed(b"data: a\r\rdata: b\r\r")] == ["a", "b"]


def test_event_field_and_multiline_data():
    events = SseParser().feed(b"event: content_block_delta\ndata: line1\ndata: line2\n\n")
    assert events == [SseEvent(event="content_block_delta", data="line1\nline2")]


def test_utf8_split_across_reads_decodes_whole():
    payload = 'data: {"content":"héllo ✓"}\n\n'.encode()
    cut = payload.index("✓".encode()) + 1  # in the middle of the 3-byte character
    events = feed_all(SseParser(), payload[:cut], payload[cut:])
    assert json.loads(events[0].data)["content"] == "héllo ✓"


def test_blank_line_without_data_dispatches_nothing():
    assert SseParser().feed(b"event: ping\n\n\n\n") == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=30))
def test_any_split_of_a_stream_yields_the_same_events(cuts):
    stream = (
        b": ping\n\n" + b"".join(f'data:{{"i":{i}}}\r\n\r\n'.encode() for i in range(5)) + b"event: x\ndata: [DONE]\n\n"
    )
    chunks, pos = [], 0
    for c in cuts:
        chunks.append(stream[pos : pos + c])
        pos += c
    chunks.append(stream[pos:])
    events = feed_all(SseParser(), *chunks)
    assert [e.data for e in events] == [f'{{"i":{i}}}' for i in range(5)] + ["[DONE]"]
    assert events[-1].event == "x"
