"""The bounds every fuzz test runs under: a fixed number of examples, the same ones on
every run (derandomized, so CI is repeatable), no per-example deadline."""

from __future__ import annotations

from hypothesis import HealthCheck, settings


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
