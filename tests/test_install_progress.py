"""The download bar of ``wheelwise install``: a file fetched again (a retry, or a
wheel fetched whole after it could not be unpacked as it arrived) counts once."""

from __future__ import annotations

import threading

from wheelwise.cli.install_cmd import RichProgress


def _completed(sink: RichProgress) -> float:
    return next(t for t in sink.progress.tasks if t.id == sink.task).completed


def test_a_file_started_again_counts_once() -> None:
    with RichProgress() as sink:
        sink.expect({"big.whl": 1000, "small.whl": 10})
        sink.start(1000, "big.whl")
        sink.advance(600)  # then the stream stops: fetched again, whole
        sink.start(10, "small.whl")
        sink.advance(10)
        sink.start(1000, "big.whl")
        sink.advance(1000)
        assert _completed(sink) == 1010
        total = next(t for t in sink.progress.tasks if t.id == sink.task).total
        assert total == 1010


def test_threads_count_their_own_files() -> None:
    with RichProgress() as sink:
        sink.expect({f"w{i}.whl": 300 for i in range(4)})

        def fetch(name: str) -> None:
            sink.start(300, name)
            sink.advance(100)
            sink.start(300, name)  # a retry, in the same thread
            for _ in range(3):
                sink.advance(100)

        threads = [threading.Thread(target=fetch, args=(f"w{i}.whl",)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert _completed(sink) == 1200
