"""The ``libraries`` section: the CUDA/ROCm user-space libraries the target would
load, their versions and which copy wins; CUDA majors mixed in one environment."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from wheelwise.doctor.context import DoctorContext
from wheelwise.doctor.cuda_machine import cuda_machine
from wheelwise.doctor.distributions import InstalledDistribution, record_files
from wheelwise.doctor.findings import ERROR, WARNING, Finding
from wheelwise.doctor.library_names import (
    cuda_major_of_distribution,
    cupy_build,
    parse_library_name,
)
from wheelwise.doctor.library_survey import SEARCH_RULE, LibraryCopy, Survey, survey
from wheelwise.doctor.loader import VIA_CACHE
from wheelwise.doctor.path_fixes import drop_copies
from wheelwise.doctor.runner import ProbeOutcome

__all__ = ["libraries_probe"]

SECTION = "libraries"
_CU_FOLDER = re.compile(r"nvidia/cu([0-9]{2,3})/")


def libraries_probe(context: DoctorContext) -> ProbeOutcome:
    found = survey(context)
    findings: list[Finding] = []
    findings += _mixed_wheels(found.distributions)
    findings += _mixed_cupy(found.distributions, context)
    findings += _mixed_runtimes(found)
    findings += _shadowed(found)
    return ProbeOutcome(findings=findings, facts={SECTION: _facts(found)})


def _facts(found: Survey) -> dict[str, Any]:
    if not found.linux or found.search is None:
        return {"searched": False, "reason": "the target is not a Linux interpreter"}
    search = found.search
    winners = {id(copy) for copy in found.winners.values()}
    order: list[dict[str, str | None]] = [
        {"path": e.shown, "searched": "LD_PRELOAD"} for e in search.preload
    ]
    order += [
        {"path": f.shown, "kind": f.kind, "searched": f.searched or VIA_CACHE}
        for f in search.searched
    ]
    return {
        "LD_PRELOAD": search.ld_preload,
        "LD_LIBRARY_PATH": search.ld_library_path,
        "ld.so.cache": search.cache_state,
        "rule": SEARCH_RULE,
        "frameworks_loading_by_path": list(found.frameworks),
        "search_order": order,
        "not_searched": [f.shown for f in search.folders if f.order is None],
        "libraries": [
            c.to_fact(id(c) in winners)
            for c in sorted(
                found.copies, key=lambda c: (c.soname, c.rank is None, c.rank or (0, 0))
            )
        ],
        "needed": {soname: list(users) for soname, users in found.needed.items()},
        "shared_objects_scanned": found.scanned,
        "scan_complete": found.scan_complete,
    }


# -- CUDA majors mixed ----------------------------------------------------------------------


def _wheel_major(dist: InstalledDistribution) -> int | None:
    """The CUDA major of an ``nvidia-*`` distribution: its ``-cuNN`` suffix, or for the
    unsuffixed CUDA 13 wheels the ``nvidia/cuNN/`` folder they install into."""
    major = cuda_major_of_distribution(dist.name)
    if major is not None or not dist.name.startswith("nvidia-"):
        return major
    for path in record_files(dist):
        match = _CU_FOLDER.match(path)
        if match:
            return int(match.group(1))
    return None


def _mixed_wheels(distributions: Sequence[InstalledDistribution]) -> list[Finding]:
    by_major: dict[int, list[InstalledDistribution]] = {}
    major_of: dict[str, int] = {}
    for dist in distributions:
        major = _wheel_major(dist)
        if major is not None:
            by_major.setdefault(major, []).append(dist)
            major_of[dist.name] = major
    if len(by_major) < 2:
        return []
    # Which majors the other installed packages ask for (torch requires the cu12 ones).
    wanted: dict[int, list[str]] = {}
    for dist in distributions:
        if dist.name in major_of:
            continue
        for major in sorted({major_of[r] for r in dist.requires if r in major_of}):
            wanted.setdefault(major, []).append(dist.spec)
    keep = next(iter(wanted)) if len(wanted) == 1 else max(by_major)
    remove = [d.name for major, dists in sorted(by_major.items()) if major != keep for d in dists]
    listing = "; ".join(
        f"CUDA {major}: " + ", ".join(d.spec for d in dists)
        for major, dists in sorted(by_major.items())
    )
    asked = "; ".join(
        f"{', '.join(specs)} require the CUDA {m} ones" for m, specs in sorted(wanted.items())
    )
    fix = "pip uninstall " + " ".join(remove)
    blocking = [
        spec.split()[0] for major, specs in wanted.items() if major != keep for spec in specs
    ]
    if blocking:
        upgrade = " ".join(blocking)
        fix = f"wheelwise install --upgrade {upgrade} (their CUDA {keep} builds), then {fix}"
    return [
        Finding(
            section=SECTION,
            code="mixed-cuda-majors",
            severity=ERROR,
            what=f"nvidia-* wheels of {len(by_major)} CUDA majors are installed: {listing}",
            why="each major ships its own SONAMEs (libcublas.so.11, libcublas.so.12), so one "
            "process can load both: two CUDA runtimes side by side, and a package built "
            "for one major picking up the other's libraries" + (f" ({asked})" if asked else ""),
            fix=fix,
            facts={
                "majors": {str(m): [d.spec for d in ds] for m, ds in sorted(by_major.items())},
                "keep": keep,
                "remove": remove,
            },
        )
    ]


def _mixed_cupy(
    distributions: Sequence[InstalledDistribution], context: DoctorContext
) -> list[Finding]:
    builds = [(dist, build) for dist in distributions if (build := cupy_build(dist.name))]
    if len(builds) < 2:
        return []
    driver = cuda_machine(context).driver

    def preference(item: tuple[InstalledDistribution, str]) -> tuple[int, int]:
        kind, _, number = item[1].partition(" ")
        major = int(number) if kind == "CUDA" and number.isdigit() else -1
        fits = driver is None or major <= driver[0]
        return (1 if fits and major >= 0 else 0, major)

    keep = max(builds, key=preference)[0]
    names = " ".join(dist.name for dist, _ in builds)
    listing = " and ".join(f"{dist.spec} ({build})" for dist, build in builds)
    return [
        Finding(
            section=SECTION,
            code="mixed-cupy-builds",
            severity=ERROR,
            what=f"CuPy is installed {len(builds)} times: {listing}",
            why="every CuPy build installs the same cupy package: the last one installed "
            "overwrote the others' files, so `import cupy` runs a mix built for different "
            "CUDA versions (and uninstalling one removes files the other needs)",
            fix=f"pip uninstall -y {names} && pip install {keep.name}=={keep.version}",
            facts={"builds": {dist.name: build for dist, build in builds}, "keep": keep.name},
        )
    ]


def _major(soname: str) -> int | None:
    name = parse_library_name(soname)
    return name.version[0] if name and name.version else None


def _mixed_runtimes(found: Survey) -> list[Finding]:
    """Two majors of one library loaded into the target's process (preloaded, or
    needed by its packages), each found by the loader."""
    users: dict[str, list[str]] = {}
    for copy in found.preloaded:
        users.setdefault(copy.soname, []).append(f"LD_PRELOAD {copy.path}")
    for soname, consumers in found.needed.items():
        if soname in found.winners:
            users.setdefault(soname, []).append("needed by " + ", ".join(consumers[:3]))
    by_stem: dict[str, dict[int, list[str]]] = {}
    for soname in users:
        name, major = parse_library_name(soname), _major(soname)
        if name is not None and major is not None:
            by_stem.setdefault(name.stem, {}).setdefault(major, []).append(soname)
    findings = []
    for stem, majors in sorted(by_stem.items()):
        if len(majors) < 2:
            continue
        sonames = [s for major in sorted(majors) for s in majors[major]]
        parts = [f"{s} ({'; '.join(users[s])})" for s in sonames]
        findings.append(
            Finding(
                section=SECTION,
                code="mixed-runtime-majors",
                severity=ERROR,
                what=f"{stem} of {len(majors)} CUDA majors is loaded together: "
                + " and ".join(parts),
                why="one process then holds two copies of the library for different CUDA "
                "majors: memory, streams and handles made by one are invalid in the other, "
                "and CUDA calls fail or crash",
                fix=_mixed_runtime_fix(found, sonames, max(majors)),
                facts={"library": stem, "sonames": {s: users[s] for s in sonames}},
            )
        )
    return findings


def _mixed_runtime_fix(found: Survey, sonames: Sequence[str], keep: int) -> str:
    preloaded = [c for c in found.preloaded if c.soname in sonames and _major(c.soname) != keep]
    if preloaded:
        return drop_copies(found.search, preloaded)
    owners = _owners(
        found, [u for s in sonames if _major(s) != keep for u in found.needed.get(s, ())]
    )
    if owners:
        names = " ".join(owners)
        return (
            f"wheelwise install --upgrade {names} (their CUDA {keep} builds), "
            f"or pip uninstall {names}"
        )
    return f"remove the packages built for CUDA majors other than {keep}"


def _owners(found: Survey, relative_paths: Iterable[str]) -> list[str]:
    """The distributions whose RECORD lists these files (relative to a site folder)."""
    wanted = set(relative_paths)
    owners: list[str] = []
    for dist in found.distributions:
        if dist.name.startswith("nvidia-"):
            continue
        if any(path in wanted for path in record_files(dist)):
            owners.append(dist.name)
    return owners


# -- one SONAME, several copies ---------------------------------------------------------------


def _shadowed(found: Survey) -> list[Finding]:
    """Warnings for a SONAME found in several versions where the environment's own copy
    loses, or where the environment has none and the search order alone picks one. The
    environment's copy winning over the system's is how the wheels are meant to work."""
    findings = []
    for soname, winner in sorted(found.winners.items()):
        if winner.is_own:
            continue
        reachable = [
            c for c in found.copies if c.soname == soname and c.rank is not None and c is not winner
        ]
        own = [c for c in reachable if c.is_own]
        if own:
            differing = [c for c in own if c.version != winner.version]
            if differing:
                findings.append(_shadow_finding(found, winner, differing))
            continue
        differing = [c for c in reachable if c.release is not None and c.version != winner.version]
        if winner.release is not None and differing:
            findings.append(_versions_differ_finding(found, winner, differing))
    return findings


def _shadow_finding(found: Survey, winner: LibraryCopy, own: Sequence[LibraryCopy]) -> Finding:
    return _several_copies(
        "library-shadowed",
        winner,
        own,
        what=f"{winner.soname} {winner.version} from {winner.searched} ({winner.path}) wins "
        "over the environment's own copy:",
        why=f"the loader takes the first {winner.soname} it finds and never loads a second: "
        f"the packages installed with {own[0].version} run with {winner.version} instead, "
        "which may lack symbols they use ('undefined symbol') or not match the libraries "
        "installed beside it",
        fix=_drop(found, winner),
    )


def _versions_differ_finding(
    found: Survey, winner: LibraryCopy, others: Sequence[LibraryCopy]
) -> Finding:
    by_path = winner.searched in ("LD_PRELOAD", "LD_LIBRARY_PATH")
    return _several_copies(
        "library-versions-differ",
        winner,
        others,
        what=f"{winner.soname} is found in several versions: {winner.version} at "
        f"{winner.path} ({winner.searched}) wins over",
        why="which version a package gets depends on the search order alone: one built "
        f"against another version than {winner.version} may lack symbols or misbehave",
        fix=_drop(found, winner)
        if by_path
        else "remove the folder you do not want from /etc/ld.so.conf.d, then run sudo ldconfig",
    )


def _several_copies(
    code: str, winner: LibraryCopy, losers: Sequence[LibraryCopy], *, what: str, why: str, fix: str
) -> Finding:
    """A warning about one SONAME found in several versions: *what* says which wins,
    the copies it wins over follow."""
    lost = ", ".join(f"{c.where} ({c.version})" for c in losers)
    return Finding(
        section=SECTION,
        code=code,
        severity=WARNING,
        what=f"{what} {lost}",
        why=why,
        fix=fix,
        facts={
            "soname": winner.soname,
            "winner": winner.to_fact(True),
            "others": [c.to_fact(False) for c in losers],
        },
    )


def _drop(found: Survey, winner: LibraryCopy) -> str:
    if winner.searched == "JAX":
        return f"pip uninstall {winner.distribution}" if winner.distribution else ""
    return drop_copies(found.search, [winner])
