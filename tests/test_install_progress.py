"""The download bar of ``wheelwise install``: its total is the sum of the sizes the
index gave for every download, known before the first starts, so it reads
``1.2/2.9 GB``, not ``1.2/? GB``."""

from __future__ import annotations

from wheelwise.cli.install_cmd import RichProgress


def test_the_total_is_the_sum_of_the_sizes_given() -> None:
    with RichProgress() as progress:
        (task,) = progress.progress.tasks
        assert task.total is None  # nothing started yet
        progress.start(100, "a-1.0-py3-none-any.whl")
        assert task.total == 100
        progress.start(250, "b-1.0-py3-none-any.whl")
        progress.advance(60)
        assert task.completed == 60
        assert task.total == 350
        progress.start(100, "a-1.0-py3-none-any.whl")  # a retry counts once
        assert task.total == 350
        progress.finish("a-1.0-py3-none-any.whl")
        assert task.description == "fetched 1"
        progress.start(None, "c-1.0-py3-none-any.whl")  # a size nobody gave
        assert task.total is None


def test_the_whole_total_is_known_before_the_first_download_starts() -> None:
    """Four downloads at a time: the total counts the ones not started yet too."""
    sizes = {"a-1.0-py3-none-any.whl": 100, "b-1.0-py3-none-any.whl": 250}
    with RichProgress() as progress:
        (task,) = progress.progress.tasks
        progress.expect({**sizes, "c-1.0-py3-none-any.whl": 50})
        progress.start(100, "a-1.0-py3-none-any.whl")
        assert task.total == 400
        progress.start(None, "b-1.0-py3-none-any.whl")  # the index's size stands
        assert task.total == 400
        progress.finish("a-1.0-py3-none-any.whl")
        assert task.description == "fetched 1 of 3"


def test_once_downloads_end_a_spinner_says_what_follows() -> None:
    """Unpacking a CUDA stack takes seconds after the last byte: the bar gives way to
    a spinner until the command is done."""
    with RichProgress() as progress:
        progress.start(10, "a-1.0-py3-none-any.whl")
        progress.finish("a-1.0-py3-none-any.whl")
        progress.close()  # what the fetcher does once every download is complete
        assert progress.status is not None
        assert "installing 1 package: unpacking and linking" in str(progress.status.status)
    assert progress.status is None


def test_no_spinner_without_downloads() -> None:
    with RichProgress() as progress:
        progress.close()
        assert progress.status is None
