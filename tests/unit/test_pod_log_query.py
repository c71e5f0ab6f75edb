"""`Client.pod_log`'s request: the PodLogOptions query of `GET pods/P/log` (kubernetes
staging/src/k8s.io/api/core/v1 PodLogOptions: container, follow, previous, tailLines, timestamps)."""

from collections.abc import Iterator

from rollguard.cluster.client import LogOptions, pod_log_query
from rollguard.cluster.transport import stream_lines


def test_a_crash_loops_previous_container_followed() -> None:
    assert pod_log_query(LogOptions("app", follow=True, previous=True, tail_lines=100)) == [
        ("container", "app"), ("follow", "true"), ("previous", "true"), ("tailLines", "100"),
    ]  # fmt: skip


def test_timestamps_as_the_kubelet_reads_them() -> None:
    assert pod_log_query(LogOptions("app", timestamps=True)) == [("container", "app"), ("timestamps", "true")]


def test_defaults_ask_only_for_the_container() -> None:
    assert pod_log_query(LogOptions("app")) == [("container", "app")]


class _Chunks:
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def stream(self, _amt: int, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks


def test_lines_split_across_chunks_and_a_last_partial_line() -> None:
    resp = _Chunks(b"INFO star", b"ting\n\nFATAL x\nexit", b" 1")
    assert list(stream_lines(resp, keep_partial=True)) == [b"INFO starting", b"", b"FATAL x", b"exit 1"]
    # a watch's partial line is a cut event: dropped
    assert list(stream_lines(resp, keep_partial=False)) == [b"INFO starting", b"", b"FATAL x"]
