"""Incremental Server-Sent Events parser over raw bytes (WHATWG HTML §9.2.6).

Feed it whatever each socket read returned; it yields every event completed by
those bytes, so the caller can stamp an event with the time of the read that
completed it. It handles what real LLM streams do: `data:` with or without a
space, `:` comment/ping lines, CRLF/CR/LF line ends (even a CRLF split across
reads), one JSON event split across TCP writes, several events in one write,
multi-line data, and UTF-8 split across reads. No line buffer grows beyond
one event.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseEvent", "SseParser"]


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

    def __init__(self) -> None:
        self._buf = bytearray()
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self.comments = 0
        self.bytes_seen = 0
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse `chunk` (any slice of the stream) and return the events it completed, in order."""
        self.bytes_seen += len(chunk)
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]  # second half of a CRLF whose CR ended the previous read
        self._skip_lf = False
        self._buf += chunk
        out: list[SseEvent] = []
        start = 0
        buf = self._buf
        n = len(buf)
        i = 0
        while i < n:
            c = buf[i]
            if c == 0x0A or c == 0x0D:  # LF or CR
                end = i + 1
                if c == 0x0D:
                    if i + 1 == n:
                        self._skip_lf = True  # a CR ends the line now; drop an LF that may open the next read
                    elif buf[i + 1] == 0x0A:
                        end = i + 2
                ev = self._line(bytes(buf[start:i]))
                if ev is not None:
                    out.append(ev)
                start = i = end
                continue
            i += 1
        del buf[:start]
        return out

    def _line(self, raw: bytes) -> SseEvent | None:
        if not raw:  # blank line: dispatch
            if not self._data:
                self._event = ""
                return None
            ev = SseEvent(event=self._event or "message", data="\n".join(self._data), id=self._id)
            self._data = []
            self._event = ""
            return ev
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            self.comments += 1
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
        # "retry" and unknown fields are ignored, as the spec says.
        return None

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line still held (diagnostics for a stream that ended mid-event)."""
        return len(self._buf)

    @property
    def has_partial_event(self) -> bool:
        """True when data lines were read but the blank line that dispatches them never came."""
        return bool(self._data) or bool(self._buf.strip())
