"""What crosses the pipe between the worker and a probe process: one typed, versioned shape each way.

planner.worker.probe_pool writes a ProbeRequest (or a ProbeCancel) as one JSON line and reads a ProbeResult back;
planner.worker.probe_child does the reverse. Both ends build and read these dataclasses, never loose dicts, so a
sample is typed from the schedule (a ProbeTarget) to the stored row (a TtftSample → planner.store.probes.sample_row).

Every message carries `version` (WIRE_VERSION). A message of any other version, or with a field this side does not
know, is refused with a WireError that says so — never half-read. The API key travels in a ProbeRequest only; no
error message here repeats a field's value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from planner.errors import PlannerError
from planner.probes.ttft import ProbeTarget, TtftSample

__all__ = [
    "WIRE_VERSION",
    "ProbeCancel",
    "ProbeRequest",
    "ProbeResult",
    "WireError",
    "decode_line",
    "encode_line",
    "parse_child_message",
    "parse_ready",
    "ready_message",
    "sample_from_dict",
]

#: The version of every message on the probe pipe; bump it when a message's shape changes.
WIRE_VERSION = 1


class WireError(PlannerError, ValueError):
    """A message on the probe pipe this side cannot read: another version, a missing or unknown field, a bad value."""


def _check_version(version: object, what: str) -> None:
    if version != WIRE_VERSION or isinstance(version, bool):
        raise WireError(f"{what}: wire version {version!r} is not supported (this side speaks version {WIRE_VERSION})")


def _known(cls: type, data: object, what: str) -> dict[str, Any]:
    """`data` as keyword arguments of dataclass `cls`; WireError for a non-object or an unknown field."""
    if not isinstance(data, Mapping):
        raise WireError(f"{what}: expected an object, got {type(data).__name__}")
    names = {f.name for f in fields(cls)}
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise WireError(f"{what}: unknown field(s) {', '.join(unknown)}")
    return dict(data)


def sample_from_dict(data: object) -> TtftSample:
    """The TtftSample that TtftSample.to_dict() wrote. Raises WireError (unknown or missing fields)."""
    try:
        return TtftSample(**_known(TtftSample, data, "sample"))
    except TypeError as exc:  # a required field is missing
        raise WireError(f"sample: {exc}") from None


def _target_from_dict(data: object) -> ProbeTarget:
    try:
        return ProbeTarget(**_known(ProbeTarget, data, "probe target"))
    except TypeError as exc:
        raise WireError(f"probe target: {exc}") from None


def _int(data: Mapping[str, Any], key: str, what: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireError(f"{what}: {key} must be an integer")
    return value


@dataclass(frozen=True)
class ProbeRequest:
    """Probe `target` once (with up to `max_attempts` attempts): the worker → a probe process."""

    id: int
    target: ProbeTarget
    api_key: str | None = None
    max_attempts: int = 2
    max_retry_wait_s: float = 5.0
    version: int = WIRE_VERSION

    def __post_init__(self) -> None:
        _check_version(self.version, "probe request")

    def __repr__(self) -> str:  # never shows the key
        key = None if self.api_key is None else "***"
        return f"ProbeRequest(id={self.id}, target={self.target!r}, api_key={key}, version={self.version})"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        return {
            "version": self.version,
            "id": self.id,
            "target": asdict(self.target),
            "api_key": self.api_key,
            "max_attempts": self.max_attempts,
            "max_retry_wait_s": self.max_retry_wait_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeRequest:
        """The request to_dict() wrote. Raises WireError (another version, an unknown or missing field)."""
        what = "probe request"
        _check_version(data.get("version"), what)
        kwargs = _known(cls, data, what)
        api_key = kwargs.get("api_key")
        if api_key is not None and not isinstance(api_key, str):
            raise WireError(f"{what}: api_key must be a string or null")
        try:
            return cls(
                id=_int(kwargs, "id", what),
                target=_target_from_dict(kwargs.get("target")),
                api_key=api_key,
                max_attempts=int(kwargs.get("max_attempts", 2)),
                max_retry_wait_s=float(kwargs.get("max_retry_wait_s", 5.0)),
            )
        except WireError:
            raise
        except (TypeError, ValueError) as exc:
            raise WireError(f"{what}: {exc}") from None


@dataclass(frozen=True)
class ProbeCancel:
    """Stop the probe of request `id` (its probe task is cancelled; no result is sent): the worker → a probe process."""

    id: int
    version: int = WIRE_VERSION

    def __post_init__(self) -> None:
        _check_version(self.version, "probe cancel")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        return {"version": self.version, "cancel": self.id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeCancel:
        """The cancel to_dict() wrote. Raises WireError."""
        what = "probe cancel"
        _check_version(data.get("version"), what)
        unknown = sorted(str(k) for k in data if k not in ("version", "cancel"))
        if unknown:
            raise WireError(f"{what}: unknown field(s) {', '.join(unknown)}")
        return cls(id=_int(data, "cancel", what))


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of request `id`: its `sample`, or the `error` that left it without one (a probe process → the
    worker). Exactly one of the two is set."""

    id: int
    sample: TtftSample | None = None
    error: str | None = None
    version: int = WIRE_VERSION

    def __post_init__(self) -> None:
        _check_version(self.version, "probe result")
        if (self.sample is None) == (self.error is None):
            raise WireError("probe result: exactly one of sample and error must be set")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready)."""
        out: dict[str, Any] = {"version": self.version, "id": self.id}
        if self.sample is not None:
            out["sample"] = self.sample.to_dict()
        else:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeResult:
        """The result to_dict() wrote. Raises WireError (another version, an unknown or missing field)."""
        what = "probe result"
        _check_version(data.get("version"), what)
        kwargs = _known(cls, data, what)
        error = kwargs.get("error")
        if error is not None and not isinstance(error, str):
            raise WireError(f"{what}: error must be a string")
        sample = sample_from_dict(kwargs["sample"]) if kwargs.get("sample") is not None else None
        return cls(id=_int(kwargs, "id", what), sample=sample, error=error)


def ready_message() -> dict[str, Any]:
    """The first line a probe process writes, once its imports and warm-up are done."""
    return {"ready": True, "version": WIRE_VERSION}


def parse_ready(line: bytes) -> bool:
    """True when `line` is a probe process's ready line of this version; False when it is no ready line at all
    (the process died or wrote something else). Raises WireError for a ready line of another version."""
    try:
        data = decode_line(line)
    except WireError:
        return False
    if data.get("ready") is not True:
        return False
    _check_version(data.get("version"), "probe process ready line")
    return True


def parse_child_message(data: Mapping[str, Any]) -> ProbeRequest | ProbeCancel:
    """What the worker sent a probe process: a ProbeCancel (it has `cancel`) or a ProbeRequest. Raises WireError."""
    if "cancel" in data:
        return ProbeCancel.from_dict(data)
    return ProbeRequest.from_dict(data)


def encode_line(message: ProbeRequest | ProbeCancel | ProbeResult | Mapping[str, Any]) -> bytes:
    """One message as a JSON line (newline-terminated bytes)."""
    data = message if isinstance(message, Mapping) else message.to_dict()
    return json.dumps(data).encode() + b"\n"


def decode_line(line: bytes) -> dict[str, Any]:
    """One JSON line as an object. Raises WireError (not JSON, or not an object)."""
    try:
        data = json.loads(line)
    except ValueError:
        raise WireError("not a JSON line") from None
    if not isinstance(data, dict):
        raise WireError(f"expected a JSON object, got {type(data).__name__}")
    return data
