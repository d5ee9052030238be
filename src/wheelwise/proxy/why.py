"""The ``/why/<project>/`` page: which build the proxy serves for each release, and why."""

from __future__ import annotations

from wheelwise.proxy.choice import Passthrough, ProjectView, Rewrite
from wheelwise.proxy.machines import Machine


def explain(view: ProjectView, machine: Machine) -> str:
    """Plain text, newest release first."""
    lines = [f"{view.name} for {machine.name} ({machine.source})", ""]
    if view.stale is not None:
        lines.insert(1, f"The last page read: the upstreams fail now ({view.stale})")
    for release in reversed(view.releases):
        lines.append(f"{view.name} {release.version} (from {release.upstream})")
        for entry in release.entries:
            if isinstance(entry, Rewrite):
                lines.append(
                    f"  {entry.filename}: variant {entry.label} of {entry.source.filename}"
                )
                lines.append(f"    why: {entry.why}")
            elif isinstance(entry, Passthrough):
                reason = f" ({entry.why})" if entry.why else ""
                lines.append(f"  {entry.filename}: as the upstream serves it{reason}")
        for omitted in release.omitted:
            lines.append(f"  {omitted.filename}: not listed: {omitted.why}")
        lines.append("")
    if view.skipped:
        lines.append("Skipped upstream entries (not files the proxy can list):")
        lines += [f"  {note}" for note in view.skipped]
        lines.append("")
    return "\n".join(lines)
