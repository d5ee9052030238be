"""The bounds every fuzz test runs under: a fixed number of examples, the same ones on
every run (derandomized, so CI is repeatable), no per-example deadline; and the
damage a fuzz test does to a valid file."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def bounded(max_examples: int, *, function_fixtures: bool = False) -> settings:
    """Settings for a fuzz test of *max_examples*; *function_fixtures* when it uses a
    function-scoped fixture (tmp_path) that is the same for every example."""
    checks = [HealthCheck.too_slow]
    if function_fixtures:
        checks.append(HealthCheck.function_scoped_fixture)
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=checks,
    )


def damaged(data: bytes) -> st.SearchStrategy[bytes]:
    """Copies of *data* damaged as a disk or a network damages a file: cut short,
    bits flipped, or a run of bytes overwritten."""
    size = len(data)
    cut = st.integers(0, size).map(lambda end: data[:end])
    flipped = st.lists(st.tuples(st.integers(0, size - 1), st.integers(0, 7)), min_size=1).map(
        lambda flips: _flipped(data, flips)
    )
    overwritten = st.tuples(st.integers(0, size - 1), st.binary(min_size=1, max_size=64)).map(
        lambda where: data[: where[0]] + where[1] + data[where[0] + len(where[1]) :]
    )
    return st.one_of(cut, flipped, overwritten)


def _flipped(data: bytes, flips: list[tuple[int, int]]) -> bytes:
    mutated = bytearray(data)
    for position, bit in flips:
        mutated[position] ^= 1 << bit
    return bytes(mutated)
