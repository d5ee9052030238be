"""What an index would install today for the releases of installed variant wheels:
for each, the wheel ``wheelwise install`` would choose for this machine (the same
finder, release metadata and selection), asked only with ``--index-url``.

The lookups run in a thread of their own and are given part of the probe's time:
an index that does not answer becomes one finding, and the rest of the builds
section still reports.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wheelwise.environment.interpreter import TargetEnvironment
    from wheelwise.resolve.selection import Selection, Unavailable
    from wheelwise.variants.metadata import VariantMetadata
    from wheelwise.variants.supported import SupportedProperties

__all__ = ["IndexAnswer", "IndexChoices", "ask_index"]

# Of the probe's time, the share the index may take (the rest reads and judges).
INDEX_SHARE = 0.6


@dataclass(frozen=True)
class IndexAnswer:
    """What the index offers for one installed release: the wheel install would
    choose (a :class:`Selection`), why none fits (:class:`Unavailable`), or None
    when the index has no such release."""

    choice: Selection | Unavailable | None
    # Problems with the release's variant metadata that were worked around.
    notes: tuple[str, ...] = ()


@dataclass
class IndexChoices:
    """The answers by normalized name, and why the index could not be asked (if so)."""

    url: str
    answers: dict[str, IndexAnswer] = field(default_factory=dict)
    failure: str | None = None


def ask_index(
    url: str,
    releases: Sequence[tuple[str, str]],
    target: TargetEnvironment,
    supported: Callable[[VariantMetadata], SupportedProperties],
    timeout: float,
    installed: Mapping[str, str] | None = None,
) -> IndexChoices:
    """Ask *url* about each of *releases* (``(normalized name, version)``) within
    ``timeout * INDEX_SHARE`` seconds; never raises. *installed* (``{name:
    version}``): the versions an ``abi_dependency`` build is matched against first,
    as install matches them."""
    choices = IndexChoices(url)
    if not releases:
        return choices
    budget = max(0.1, timeout * INDEX_SHARE)
    question = _Question(tuple(releases), target, supported, budget, dict(installed or {}))

    def ask_all() -> None:
        try:
            _ask(choices, question)
        except Exception as exc:  # this thread has no caller to raise to: a finding
            choices.failure = _reason(exc)

    worker = threading.Thread(target=ask_all, name="doctor-index", daemon=True)
    worker.start()  # a daemon: a server that never answers must not keep us alive
    worker.join(budget)
    if worker.is_alive():
        return IndexChoices(url, failure=f"no answer within {budget:.1f} s")
    return choices


@dataclass(frozen=True)
class _Question:
    releases: tuple[tuple[str, str], ...]
    target: TargetEnvironment
    supported: Callable[[VariantMetadata], SupportedProperties]
    budget: float
    installed: Mapping[str, str]


def _ask(choices: IndexChoices, question: _Question) -> None:
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    from wheelwise.client.index_client import IndexClient, IndexSource
    from wheelwise.policy.retry import RetryPolicy
    from wheelwise.resolve.finder import IndexFinder
    from wheelwise.resolve.selection import TargetSpec, select_wheel

    started, budget, target = time.monotonic(), question.budget, question.target
    preferred = {}
    for name, text in question.installed.items():
        try:
            preferred[canonicalize_name(name)] = Version(text)
        except InvalidVersion:
            continue  # a broken version matches nothing
    spec = TargetSpec(tags=target.tags, supported=question.supported, abi_preferred=preferred)
    notes: list[str] = []
    # No page cache: the question is what the index offers today.
    with IndexClient(
        timeout=budget, deadline=budget, retry=RetryPolicy(retries=0), cache=False
    ) as client:
        finder = IndexFinder(
            [IndexSource.index(choices.url)],
            client,
            tags=target.tags,
            python_version=".".join(str(part) for part in target.version_info),
            warn=notes.append,
        )
        try:
            for name, version in question.releases:
                if time.monotonic() - started > budget:
                    choices.failure = f"no answer within {budget:.1f} s"
                    return
                notes.clear()
                try:
                    release = finder.release(name, Version(version))
                except InvalidVersion:
                    release = None
                choice = (
                    None
                    if release is None
                    else select_wheel(canonicalize_name(name), release, spec)
                )
                choices.answers[name] = IndexAnswer(choice, tuple(notes))
        finally:
            finder.close()


def _reason(exc: Exception) -> str:
    from wheelwise.client.errors import SourceError

    if isinstance(exc, SourceError):
        return exc.message  # says the URL, what happened and what to check
    return f"{type(exc).__name__}: {exc}"
