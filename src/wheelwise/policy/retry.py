"""The retry policy of every request wheelwise sends (pages, metadata files, wheels),
and the one loop that applies it."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

__all__ = ["RetryPolicy", "RetryableFailure", "with_retries"]

T = TypeVar("T")


class RetryPolicy(NamedTuple):
    """*retries* more tries after the first, waiting ``backoff * factor**n`` (at most
    *max_delay*) before the n-th retry; on connection errors, timeouts and 5xx."""

    retries: int = 3
    backoff: float = 0.25
    factor: float = 2.0
    max_delay: float = 1.0

    def delay(self, retry: int) -> float:
        return min(self.backoff * self.factor**retry, self.max_delay)


class RetryableFailure(Exception):
    """One try failed in a way that another may not: *give_up(tries)* is the error to
    raise when no try is left (*tries*: how many were made)."""

    def __init__(self, give_up: Callable[[int], BaseException]) -> None:
        super().__init__()
        self.give_up = give_up


def with_retries(
    policy: RetryPolicy,
    attempt: Callable[[], T],
    *,
    sleep: Callable[[float], None],
    before_retry: Callable[[], None] | None = None,
) -> T:
    """What *attempt* returns, trying it again after each :class:`RetryableFailure`
    as *policy* allows; any other exception ends it at once. *before_retry* runs after
    each wait (to stop a cancelled download, say)."""
    tries = policy.retries + 1
    for made in range(1, tries + 1):
        try:
            return attempt()
        except RetryableFailure as failure:
            if made == tries:
                raise failure.give_up(made) from None
        sleep(policy.delay(made - 1))
        if before_retry is not None:
            before_retry()
    raise AssertionError("unreachable")  # pragma: no cover
