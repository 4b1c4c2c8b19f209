"""The worksheet URL contract: inputs and their provenance round-trip; old links and hand-edited values stay safe."""

from urllib.parse import parse_qsl

from planner.worksheet.budget import Worksheet
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.url import format_value, query_dict, query_for, worksheet_from_query

BUILTIN = {"inline", "chat", "agent"}


def _measured() -> Worksheet:
    ws = Worksheet(interaction="chat")
    ws = ws.with_figure(
        "queue_ms",
        Figure(
            823.4567,
            "ms",
            Source.PROBE,
            detail="acme-eu · worst hour p95 − quietest p50",
            n=240,
            window="2026-11-29 00:00 – 2026-11-30 00:00 Europe/Berlin",
            measured_at_ms=1_764_500_000_000,
        ),
    )
    ws = ws.with_figure(
        "cache_hit_fraction", Figure(0.4071, "fraction", Source.LOG, detail="team.jsonl | 12,000 requests")
    )
    targets = {**ws.targets_ms, "chat": 800.0, "custom-review-bot": 3000.0}
    labels = {**ws.target_labels, "custom-review-bot": "Review bot"}
    return Worksheet.from_dict({**ws.to_dict(), "targets_ms": targets, "target_labels": labels})


def test_inputs_and_provenance_round_trip_through_the_query_string():
    ws = _measured()
    query = dict(parse_qsl(query_for(ws, BUILTIN)))
    back = worksheet_from_query(query)
    assert back.queue_ms == ws.queue_ms  # value, source, detail, n, window and date all survive
    assert back.cache_hit_fraction == ws.cache_hit_fraction
    assert back.network_ms.source == Source.TYPED and back.network_ms.value == 80
    assert back.targets_ms["chat"] == 800 and back.targets_ms["custom-review-bot"] == 3000
    assert back.target_labels["custom-review-bot"] == "Review bot" and back.interaction == "chat"


def test_typed_values_carry_no_provenance_parameter():
    query = query_dict(Worksheet(), BUILTIN)
    assert not [k for k in query if k.endswith("_from")]
    assert query["queue_ms"] == "60" and query["cache_hit"] == "0.5"


def test_values_read_back_exactly():
    for v in (60.0, 0.5, 22773.333333333332, 1e-7, 123456789.25):
        assert float(format_value(v)) == v


def test_a_value_edited_by_hand_in_the_url_opens_as_typed():
    query = dict(parse_qsl(query_for(_measured(), BUILTIN)))
    query["queue_ms"] = "900"
    ws = worksheet_from_query(query)
    assert ws.queue_ms == Figure.typed(900, "ms")


def test_malformed_provenance_falls_back_to_typed_and_old_links_still_open():
    ws = worksheet_from_query(
        {
            "queue_ms": "35",
            "queue_ms_from": "not-base64!!",
            "cold_ms": "oops",
            "target_ms": "250",
            "interaction": "Inline completion",
        }
    )
    assert ws.queue_ms == Figure.typed(35, "ms")
    assert ws.cold_ms == Worksheet().cold_ms  # unreadable value: the default stays
    assert ws.interaction == "inline" and ws.target_ms == 250


def test_provenance_dates_name_the_zone_they_are_shown_in():
    fig = Figure(1.0, "ms", Source.PROBE, measured_at_ms=1_764_500_000_000)  # 2025-11-30 10:53:20 UTC
    assert fig.describe().endswith("2025-11-30 10:53 UTC")
    assert fig.describe("Europe/Berlin").endswith("2025-11-30 11:53 Europe/Berlin")
    assert fig.describe("Asia/Tokyo").endswith("2025-11-30 19:53 Asia/Tokyo")
