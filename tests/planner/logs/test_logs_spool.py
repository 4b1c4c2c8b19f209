"""Page uploads spooled to disk: copied in chunks with progress by bytes, kept under their own name, then read
out of core like any file, and removed when done."""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

from planner.logs import read_logs
from planner.logs.spool import CHUNK_BYTES, Spool

SAMPLES = Path(__file__).resolve().parents[3] / "assets" / "sample_logs"


def test_an_upload_is_copied_whole_in_chunks_with_a_bar_that_moves_by_bytes_and_removed_on_close():
    body = os.urandom(2 * CHUNK_BYTES + 123)
    ticks = []
    spool = Spool(
        [("big.jsonl.gz", io.BytesIO(body)), ("small.csv", io.BytesIO(b"a,b\n1,2\n"))],
        progress=lambda frac, msg: ticks.append((frac, msg)),
    )
    assert [p.read_bytes() for p in spool.paths] == [body, b"a,b\n1,2\n"]
    assert spool.names == ["big.jsonl.gz", "small.csv"]  # the ending picks the decompressor; results name the file
    fracs = [f for f, _ in ticks]
    assert len(ticks) == 4 and fracs == sorted(fracs) and fracs[-1] == 1.0  # 3 chunks of the big file, 1 small
    assert fracs[0] == CHUNK_BYTES / (len(body) + 8)
    assert ticks[0][1].startswith("saving big.jsonl.gz: 4.2 of 8.4 MB")
    folder = spool.folder
    spool.close()
    assert not folder.exists() and not spool.alive
    spool.close()  # twice is harmless


def test_an_upload_name_cannot_leave_the_spool_folder_and_two_files_may_share_a_name():
    spool = Spool(
        [
            ("../../etc/passwd.csv", io.BytesIO(b"x")),
            ("C:\\logs\\passwd.csv", io.BytesIO(b"y")),
            ("\x00..", io.BytesIO(b"z")),
        ]
    )
    try:
        assert all(p.resolve().is_relative_to(spool.folder.resolve()) for p in spool.paths)
        assert spool.names == ["passwd.csv", "passwd.csv", "upload"]
        assert [p.read_bytes() for p in spool.paths] == [b"x", b"y", b"z"]
    finally:
        spool.close()


def test_a_spooled_gzip_upload_reads_exactly_like_the_same_bytes_in_memory():
    data = gzip.compress((SAMPLES / "openai_chat_completions.jsonl").read_bytes())
    in_memory = read_logs([("agent.jsonl.gz", data)])
    spool = Spool([("agent.jsonl.gz", io.BytesIO(data))])
    try:
        on_disk = read_logs(spool.paths)
    finally:
        spool.close()
    assert on_disk.formats == {"agent.jsonl.gz": "openai_chat"} == in_memory.formats
    for col in ("ts_ms", "prompt_tokens", "cached_tokens", "output_tokens"):
        assert on_disk.frame[col].tolist() == in_memory.frame[col].tolist()
    assert len(on_disk.frame) == 400
