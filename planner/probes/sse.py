"""Incremental Server-Sent Events parser over raw bytes (WHATWG HTML §9.2.6).

Feed it whatever each socket read returned; it yields every event completed by
those bytes, so the caller can stamp an event with the time of the read that
completed it. It handles what real LLM streams do: `data:` with or without a
space, `:` comment/ping lines, CRLF/CR/LF line ends (even a CRLF split across
reads), one JSON event split across TCP writes, several events in one write,
multi-line data, and UTF-8 split across reads.

Hostile streams cost bounded CPU and memory: each byte is scanned once (a
line end is searched for with `bytes.find`, never by a Python loop per byte),
invalid UTF-8 is replaced, and a line longer than `max_line_bytes` raises
SseLineTooLong instead of growing the buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import PlannerError

__all__ = ["MAX_LINE_BYTES", "SseEvent", "SseLineTooLong", "SseParser"]

#: The longest line accepted (one `data:` line of one event); real events are a few hundred bytes.
MAX_LINE_BYTES = 1 << 20


class SseLineTooLong(PlannerError, ValueError):
    """A line grew past the parser's max_line_bytes without a line end."""


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: `event` is the type ("message" when no `event:` line was sent)."""

    event: str
    data: str
    id: str | None = None


class SseParser:
    """Push bytes in with `feed`; get completed events back.

    `comments` counts comment lines (": ping" keep-alives) seen so far;
    `bytes_seen` counts every byte fed.
    """

    def __init__(self, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._buf = bytearray()
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.comments = 0
        self.bytes_seen = 0
        self.max_line_bytes = max_line_bytes
        self._data_bytes = 0
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse `chunk` (any slice of the stream) and return the events it completed, in order.

        Raises SseLineTooLong when an unfinished line exceeds max_line_bytes."""
        self.bytes_seen += len(chunk)
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]  # second half of a CRLF whose CR ended the previous read
        self._skip_lf = False
        out: list[SseEvent] = []
        buf = self._buf
        buf += chunk
        # Complete lines end at the last line end; bytes.splitlines (C speed, CR, LF and CRLF) cuts them,
        # so a flood of comments or blank lines costs a list, not a Python step per byte.
        last = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if last >= 0:
            if buf[last] == 0x0D:
                self._skip_lf = True  # a CR ends the buffer: an LF opening the next read is its other half
            complete = bytes(buf[: last + 1])
            del buf[: last + 1]
            if not self._data:  # leading blank lines with nothing pending dispatch nothing: drop the run at once
                stripped = complete.lstrip(b"\r\n")
                if len(stripped) != len(complete):
                    self._event = ""
                complete = stripped
            for raw in complete.splitlines():
                if not raw:
                    if self._data:
                        out.append(self._dispatch())
                    else:
                        self._event = ""
                elif raw[0] == 0x3A:  # ":" comment / keep-alive
                    self.comments += 1
                else:
                    self._line(raw)
        if len(buf) > self.max_line_bytes:
            held = len(buf)
            buf.clear()
            raise SseLineTooLong(f"a line of more than {self.max_line_bytes} bytes without a line end ({held} held)")
        return out

    def _dispatch(self) -> SseEvent:
        ev = SseEvent(event=self._event or "message", data="\n".join(self._data), id=self._id)
        self._data = []
        self._data_bytes = 0
        self._event = ""
        return ev

    def _line(self, raw: bytes) -> SseEvent | None:
        if not raw:  # blank line: dispatch
            if not self._data:
                self._event = ""
                return None
            return self._dispatch()
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            self.comments += 1
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data_bytes += len(raw)
            if self._data_bytes > self.max_line_bytes:  # one event of endless data lines: the same cap as a line
                raise SseLineTooLong(f"an event of more than {self.max_line_bytes} bytes of data lines")
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
        # "retry" and unknown fields are ignored, as the spec says.
        return None

    @property
    def has_partial_event(self) -> bool:
        """True when data lines were read but the blank line that dispatches them never came."""
        return bool(self._data) or bool(self._buf.strip())
