"""An installed variant wheel against the machine as it is now: the label's
properties ranked exactly as ``wheelwise install`` ranks them
(:func:`~wheelwise.variants.ordering.rank_variants`), and, with ``--index-url``,
against the build the index's release would give today."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wheelwise.doctor.findings import ERROR, OK, WARNING, Finding
from wheelwise.doctor.fix_commands import FixCommands
from wheelwise.doctor.index_choice import IndexAnswer
from wheelwise.doctor.installed_variants import InstalledVariant
from wheelwise.doctor.variant_machine import ABI_NAMESPACE, MachineForVariant, VariantMachine

if TYPE_CHECKING:
    from wheelwise.resolve.selection import Selection, Unavailable

__all__ = ["judge_variant"]


def judge_variant(
    variant: InstalledVariant,
    machine: VariantMachine,
    commands: FixCommands,
    answer: IndexAnswer | None = None,
    index_url: str | None = None,
) -> Finding:
    """``variant-fits`` (ok), ``better-variant`` (warning) or ``variant-unfit``
    (error) for *variant*; *answer*: what *index_url* offers for its release."""
    from wheelwise.variants.ordering import rank_variants

    dist, label, metadata = variant.dist, variant.label, variant.metadata
    view = machine.for_metadata(metadata, label)
    ranking = rank_variants(metadata, view.supported)
    ranked = ranking.get(label)
    where = f"{dist.name} {dist.version}, variant {label},"
    facts: dict[str, Any] = {
        "name": dist.name,
        "version": dist.version,
        "label": label,
        "properties": [str(p) for p in metadata.properties(label)],
        "unchecked": list(view.unchecked),
    }
    chosen = answer.choice if answer is not None else None
    if answer is not None:
        facts["index"] = _index_facts(answer, index_url)
    if ranked is None:
        reason = ranking.rejected.get(label, "not compatible")
        facts["reason"] = reason
        missing = _missing_namespaces(variant, view)
        return Finding(
            section="builds",
            code="variant-unfit",
            severity=ERROR,
            what=f"{where} no longer fits this machine: {reason}{missing}",
            why="the build needs what this machine does not have (the driver or hardware "
            "changed since it was installed): it fails at import or at the first call "
            "that uses it",
            fix=_replacement(variant, view, commands, chosen, index_url),
            facts=facts,
        )
    won = "; ".join(str(p) for p in ranked.best) or "no properties"
    unchecked = (
        f"; {', '.join(view.unchecked)} not checked: a third-party plugin answers it"
        if view.unchecked
        else ""
    )
    better = _selection(chosen)
    if better is not None and better.label not in (None, label) and not view.unchecked:
        facts["better_label"] = better.label
        won_by = f" ({better.won_by})" if better.won_by is not None else ""
        return Finding(
            section="builds",
            code="better-variant",
            severity=WARNING,
            what=f"{where} fits this machine, but {index_url} offers a better build of it: "
            f"{better.label}{won_by}",
            why=f"`wheelwise install` would choose {better.label} for this machine today; "
            "the installed build leaves part of what the machine supports unused",
            fix=commands.wheelwise_install(dist.name, better.label, index_url),
            facts=facts,
        )
    return Finding(
        section="builds",
        code="variant-fits",
        severity=OK,
        what=f"{where} fits this machine ({won}){unchecked}",
        facts=facts,
    )


def _replacement(
    variant: InstalledVariant,
    view: MachineForVariant,
    commands: FixCommands,
    chosen: Selection | Unavailable | None,
    index_url: str | None,
) -> str:
    """The command that puts a build that fits in place of an unfit one: the index's
    choice (a non-variant wheel: no label), else the best label of the wheel's own
    metadata that fits, else whatever install chooses."""
    from wheelwise.variants.ordering import rank_variants

    name = variant.dist.name
    # A build against a dependency's version (abi_dependency) must match the version
    # installed now; --upgrade would let the resolver change that version instead.
    upgrade = ABI_NAMESPACE not in variant.metadata.variants[variant.label]
    selection = _selection(chosen)
    if selection is not None:
        return commands.wheelwise_install(name, selection.label, index_url, upgrade=upgrade)
    if chosen is not None:  # Unavailable: no build of the release fits
        return (
            f"no build of {name} {variant.dist.version} on {index_url} fits this machine "
            f"either: update the driver or hardware it needs, or remove it: "
            f"{commands.wheelwise_uninstall(name)}"
        )
    own = rank_variants(variant.metadata, view.supported).selected
    return commands.wheelwise_install(name, own, index_url, upgrade=upgrade)


def _missing_namespaces(variant: InstalledVariant, view: MachineForVariant) -> str:
    """`` (nvidia: no NVIDIA kernel driver ...)`` for each namespace the label uses
    that the machine does not support at all."""
    used = variant.metadata.variants[variant.label]
    clauses = [
        f"{ns}: {view.details[ns]}"
        for ns in used
        if used[ns] and ns not in view.supported.namespaces and view.details.get(ns)
    ]
    return f" ({'; '.join(clauses)})" if clauses else ""


def _selection(chosen: Selection | Unavailable | None) -> Selection | None:
    """*chosen* if the index has a wheel that fits (selection loads with the index's
    answers only)."""
    if chosen is None:
        return None
    from wheelwise.resolve.selection import Selection

    return chosen if isinstance(chosen, Selection) else None


def _index_facts(answer: IndexAnswer, index_url: str | None) -> dict[str, Any]:
    choice = answer.choice
    selection = _selection(choice)
    facts: dict[str, Any] = {"url": index_url, "notes": list(answer.notes)}
    if choice is None:
        facts.update(release=False, label=None, reason="the index has no such release")
    elif selection is not None:
        facts.update(release=True, label=selection.label, wheel=str(selection.file.filename))
    else:
        facts.update(release=True, label=None, reason=getattr(choice, "reason", ""))
    return facts
