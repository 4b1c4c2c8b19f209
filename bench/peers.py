"""AIPerf and GuideLLM, driven in the same run as our probe (issue 14): their per-request TTFTs and their CPU.

Each peer lives in its own virtual environment: `make peers` (scripts/setup-peers.sh) installs both into the
git-ignored `.peers/`; `find_peer` looks at `$TTFT_PEERS_DIR/<name>/bin/<command>` (default `.peers/`), then on
PATH, and the benches print "skipped (not installed)" when neither has it. `run_peer` runs one peer as a child
process for one workload at concurrency 1 (its CPU, with the children it waited for, from RUSAGE_CHILDREN) and
parses the TTFTs it exported, in the order it started the requests.

Both peers build their synthetic prompts and count tokens with a Hugging Face tokenizer, and there is no model hub
offline: `write_tokenizer` writes a small word-level one (one token per whitespace-separated word, the same count
the simulator uses), which transformers' AutoTokenizer loads from the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "PEERS",
    "Peer",
    "PeerRun",
    "SKIPPED",
    "Workload",
    "find_peer",
    "measured_cli",
    "measured_run",
    "parse_aiperf_records",
    "parse_guidellm_benchmarks",
    "peer_tokenizer",
    "run_peer",
    "run_peers",
    "summary_line",
    "write_tokenizer",
]

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR_VARIABLE = "TTFT_PEERS_DIR"
SKIPPED = "skipped (not installed)"

# The words of the tokenizer's vocabulary. Any other word is the unknown token, itself an ordinary English word: it
# counts as one token, is written back as that word (one token for a real engine's tokenizer too, where "[UNK]" would
# be four), so prompts keep the requested length whatever text a peer samples them from.
_UNKNOWN = "word"
_VOCABULARY_TEXT = """
the a of to and in is it that for on with as was at by be this from or an are not have had but one all they we
you he she his her their there what which when where who will would can could should about into than then them
time first token server client request response prompt model stream latency measure queue cache
"""


@dataclass(frozen=True)
class Workload:
    """What a peer sends: `requests` chat completions, streamed, one at a time, to an OpenAI-style base URL."""

    base_url: str  # ends with /v1
    model: str
    requests: int
    prompt_tokens: int
    output_tokens: int


@dataclass
class PeerRun:
    """One peer process: its TTFTs (ms, in the order it started the requests) and what its CPU cost."""

    peer: str
    command: list[str]
    ttft_ms: list[float]
    rejected: list[str]  # "<what>: <why>" for each exported request without a usable TTFT
    cpu_s: float  # user + system, the process and the children it waited for
    wall_s: float
    returncode: int
    output_tail: str  # the end of its stdout + stderr, for a failed run's message

    @property
    def requests(self) -> int:
        return len(self.ttft_ms) + len(self.rejected)

    @property
    def cpu_ms_per_request(self) -> float | None:
        return self.cpu_s * 1000 / self.requests if self.requests else None

    @property
    def failed(self) -> str | None:
        """Why the run gave no TTFT (None when it gave some): the peer's own error line when it exited with one."""
        if self.ttft_ms:
            return None
        lines = [line.strip(" │") for line in self.output_tail.splitlines() if line.strip(" │")]
        errors = [line for line in lines if "error" in line.lower()]
        if self.returncode and (errors or lines):
            return f"exit status {self.returncode}: {(errors or lines)[-1][:300]}"
        return f"exit status {self.returncode}: {self.rejected[0] if self.rejected else 'no TTFT exported'}"


def measured_run(
    argv: Sequence[str], *, timeout_s: float, **kwargs
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """(completed process, CPU seconds, wall seconds) of one child process run to its end, output captured.

    The CPU is the change in RUSAGE_CHILDREN over the run: the child's user + system time and that of every
    descendant it waited for; the caller must have no other child ending meanwhile (the benches are sequential).
    The child leads a process group of its own, so a timeout (TimeoutExpired, re-raised) or an interrupt ends its
    helpers too (AIPerf runs a dozen processes).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    wall_s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), cpu_s, wall_s


def measured_cli(*args: str, timeout_s: float) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """`measured_run` of one fresh `ttft-planner <args>` process, run from this checkout's source."""
    return measured_run(
        [sys.executable, "-c", "from planner.cli import main; main()", *args],
        timeout_s=timeout_s,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@contextlib.contextmanager
def peer_tokenizer() -> Iterator[Path]:
    """A temporary folder holding `write_tokenizer`'s tokenizer, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="peer-tokenizer-") as tmp:
        yield write_tokenizer(Path(tmp))


def write_tokenizer(directory: Path) -> Path:
    """Write a word-level Hugging Face tokenizer into `directory` (created) and return it.

    tokenizer.json (WordLevel over whitespace-split words, unknown words → "word") plus tokenizer_config.json,
    which names the fast tokenizer class so `AutoTokenizer.from_pretrained(directory)` needs no config.json and no
    network. The unknown token is deliberately not declared special: a peer that decodes with skip_special_tokens
    would otherwise drop every unknown word and send a shorter prompt than asked.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = dict.fromkeys([_UNKNOWN, *_VOCABULARY_TEXT.split()])
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=_UNKNOWN))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1_000_000}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    (directory / "special_tokens_map.json").write_text("{}", encoding="utf-8")
    return directory


_UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0}


def parse_aiperf_records(path: Path) -> tuple[list[float], list[str]]:
    """(TTFTs in ms in request-start order, rejected records) from AIPerf's `profile_export.jsonl`.

    One JSON object per request: `metadata.request_start_ns` (wall clock), `metadata.benchmark_phase`
    (warm-up records are left out), `metrics.time_to_first_token` = {value, unit}, `error` (null when it
    succeeded). A missing file is one rejection, not an exception.
    """
    if not path.is_file():
        return [], [f"{path.name}: not written"]
    accepted: list[tuple[int, float]] = []
    rejected: list[str] = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {line_no}"
        try:
            record = json.loads(line)
            meta = record["metadata"]
            if meta.get("benchmark_phase") == "warmup":
                continue
            if record.get("error"):
                rejected.append(f"{where}: error {str(record['error'])[:200]}")
                continue
            ttft = record["metrics"].get("time_to_first_token")
            if ttft is None:
                rejected.append(f"{where}: no time_to_first_token")
                continue
            scale = _UNIT_TO_MS.get(ttft.get("unit", ""))
            if scale is None:
                rejected.append(f"{where}: unknown unit {ttft.get('unit')!r}")
                continue
            accepted.append((int(meta["request_start_ns"]), float(ttft["value"]) * scale))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            rejected.append(f"{where}: unreadable ({type(exc).__name__}: {exc})")
    return [ms for _, ms in sorted(accepted)], rejected


def parse_guidellm_benchmarks(path: Path) -> tuple[list[float], list[str]]:
    """(TTFTs in ms in request-start order, rejected requests) from GuideLLM's `--output kind=json` report.

    The first benchmark's `requests.successful[]` carry `time_to_first_token_ms` and `info.timings.request_start`
    (wall-clock seconds); its `errored[]` and `incomplete[]` requests are rejections.
    """
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        groups = report["benchmarks"][0]["requests"]
    except FileNotFoundError:
        return [], [f"{path.name}: not written"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return [], [f"{path.name}: unreadable ({type(exc).__name__}: {exc})"]
    accepted: list[tuple[float, float]] = []
    rejected: list[str] = []
    for i, request in enumerate(groups.get("successful") or []):
        where = f"successful[{i}]"
        try:
            ttft_ms = request["time_to_first_token_ms"]
            if ttft_ms is None:
                rejected.append(f"{where}: no time_to_first_token_ms")
                continue
            accepted.append((float(request["info"]["timings"]["request_start"]), float(ttft_ms)))
        except (ValueError, KeyError, TypeError) as exc:
            rejected.append(f"{where}: unreadable ({type(exc).__name__}: {exc})")
    for status in ("errored", "incomplete"):
        for i, request in enumerate(groups.get(status) or []):
            error = request.get("info", {}).get("error") if isinstance(request, dict) else None
            rejected.append(f"{status}[{i}]: {str(error)[:200] if error else status}")
    return [ms for _, ms in sorted(accepted)], rejected


def _root_url(base_url: str) -> str:
    return base_url.rstrip("/").removesuffix("/v1")


def _aiperf_argv(exe: str, w: Workload, tokenizer: Path, out: Path) -> list[str]:
    return [
        exe,
        "profile",
        "--model",
        w.model,
        "--url",
        _root_url(w.base_url),  # AIPerf appends /v1/chat/completions
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        "1",
        "--request-count",
        str(w.requests),
        "--tokenizer",
        str(tokenizer),
        "--isl",
        str(w.prompt_tokens),
        "--isl-stddev",
        "0",
        "--osl",
        str(w.output_tokens),
        "--artifact-dir",
        str(out),
        "--ui-type",
        "none",
        "--export-level",
        "records",
    ]


def _guidellm_argv(exe: str, w: Workload, tokenizer: Path, out: Path) -> list[str]:
    return [
        exe,
        "run",
        "--backend",
        f"kind=openai_http,target={_root_url(w.base_url)},model={w.model}",
        "--profile",
        "kind=synchronous",
        "--constraint",
        f"kind=max_requests,count={w.requests}",
        "--data",
        f"kind=synthetic_text,prompt_tokens={w.prompt_tokens},output_tokens={w.output_tokens}",
        "--tokenizer",
        f"kind=hf_auto,model={tokenizer}",
        "--output",
        f"kind=json,path={out / 'benchmarks.json'}",
        "--disable-progress",
    ]


@dataclass(frozen=True)
class Peer:
    """A peer load generator: how to find it, call it for a workload, and read its per-request TTFTs."""

    name: str
    command: str  # its executable, also the name of its folder under $TTFT_PEERS_DIR
    clock: str  # where its TTFT clock starts and stops (read from its source)
    argv: Callable[[str, Workload, Path, Path], list[str]]  # (executable, workload, tokenizer dir, output dir)
    parse: Callable[[Path], tuple[list[float], list[str]]]  # output dir → (TTFTs ms, rejected)


PEERS = (
    Peer(
        "AIPerf",
        "aiperf",
        "perf_counter before aiohttp's request (pooled connection, so no connect) → the SSE message with content",
        _aiperf_argv,
        lambda out: parse_aiperf_records(out / "profile_export.jsonl"),
    ),
    Peer(
        "GuideLLM",
        "guidellm",
        "time.time() as httpx starts writing the headers (after any connect) → the first SSE line with a token",
        _guidellm_argv,
        lambda out: parse_guidellm_benchmarks(out / "benchmarks.json"),
    ),
)


def find_peer(peer: Peer) -> str | None:
    """The peer's executable: $TTFT_PEERS_DIR/<command>/bin/<command> (default .peers/), else on PATH, else None."""
    folder = Path(os.environ.get(PEERS_DIR_VARIABLE) or ROOT / ".peers")
    exe = folder / peer.command / "bin" / peer.command
    return str(exe) if os.access(exe, os.X_OK) else shutil.which(peer.command)


def run_peer(peer: Peer, workload: Workload, tokenizer: Path, *, timeout_s: float = 900) -> PeerRun | str:
    """Run `peer` once for `workload`; `SKIPPED` when it is not installed.

    The peer runs in a temporary folder that is removed afterwards. HF_HUB_OFFLINE stays unset although nothing
    is fetched: with it AIPerf 0.13 looks the tokenizer folder up in the hub's cache as a repository name and fails.
    """
    exe = find_peer(peer)
    if exe is None:
        return SKIPPED
    env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1"}
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer.command}-") as tmp:
        out = Path(tmp) / "out"
        argv = peer.argv(exe, workload, tokenizer, out)
        try:
            done, cpu_s, wall_s = measured_run(argv, timeout_s=timeout_s, cwd=tmp, env=env)
        except subprocess.TimeoutExpired:
            return PeerRun(peer.name, argv, [], [f"timed out after {timeout_s:.0f} s"], 0.0, timeout_s, -1, "")
        ttft_ms, rejected = peer.parse(out)
        tail = (done.stdout + done.stderr)[-2000:]
        return PeerRun(peer.name, argv, ttft_ms, rejected, cpu_s, wall_s, done.returncode, tail)


def run_peers(workload: Workload, *, timeout_s: float = 900) -> dict[str, PeerRun | str]:
    """Every peer's run of `workload` (or why it was skipped), by name, one after the other."""
    with peer_tokenizer() as tokenizer:
        return {peer.name: run_peer(peer, workload, tokenizer, timeout_s=timeout_s) for peer in PEERS}


def summary_line(name: str, run: PeerRun | str) -> str:
    """One line for a bench's output: CPU per request and median TTFT, or why there are none."""
    if isinstance(run, str):
        return f"{name}: {run}"
    if run.failed:
        return f"{name}: FAILED ({run.failed})"
    rejected = f", {len(run.rejected)} rejected" if run.rejected else ""
    return (
        f"{name}: {run.cpu_s:.2f} CPU-s for {run.requests} requests = {run.cpu_ms_per_request:.1f} ms/request "
        f"(whole process, concurrency 1, {run.wall_s:.0f} s wall; TTFT median {statistics.median(run.ttft_ms):.1f} "
        f"ms{rejected})"
    )
