"""A folder of ordinary wheels as a private index holds them, generated from a seed.

Many projects with a few to a dozen releases each; pure-Python projects ship one
``py3-none-any`` wheel per release, compiled ones a wheel per CPython version and
platform with a shared library inside. Every wheel has a full METADATA (summary,
classifiers, Requires-Dist with markers and extras, a Markdown description) and a
RECORD, and its modules are deflated like a real build's. The same seed gives the
same bytes.
"""

from __future__ import annotations

import random
from pathlib import Path

from index_build import write_wheel

WORDS = [
    "async",
    "http",
    "json",
    "yaml",
    "toml",
    "cache",
    "queue",
    "task",
    "graph",
    "table",
    "frame",
    "model",
    "schema",
    "token",
    "auth",
    "crypt",
    "hash",
    "path",
    "file",
    "stream",
    "buffer",
    "parse",
    "render",
    "template",
    "config",
    "logger",
    "metric",
    "trace",
    "event",
    "signal",
    "socket",
    "client",
    "server",
    "route",
    "proxy",
    "retry",
    "batch",
    "shard",
    "vector",
    "matrix",
    "tensor",
    "image",
    "audio",
    "video",
    "text",
    "lang",
    "date",
    "time",
    "zone",
    "money",
    "unit",
]
SUFFIXES = ["kit", "lib", "py", "tools", "core", "utils", "io", "x", "lite", "plus"]
CLASSIFIERS = [
    "Development Status :: 4 - Beta",
    "Development Status :: 5 - Production/Stable",
    "Intended Audience :: Developers",
    "License :: OSI Approved :: MIT License",
    "License :: OSI Approved :: Apache Software License",
    "Operating System :: OS Independent",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.10",
    "Programming Language :: Python :: 3.11",
    "Programming Language :: Python :: 3.12",
    "Programming Language :: Python :: 3.13",
    "Topic :: Software Development :: Libraries",
    "Typing :: Typed",
]
PYTHONS = [">=3.8", ">=3.9", ">=3.10", ">=3.9,<4", None]
PLATFORMS = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64",
    "manylinux_2_17_aarch64.manylinux2014_aarch64",
    "macosx_11_0_arm64",
    "win_amd64",
]
CPYTHONS = ["cp311-cp311", "cp312-cp312", "cp313-cp313"]
CODE = (
    "def {w}_{i}(value, *, strict=False):\n"
    '    """Return {w} for value."""\n'
    "    if strict and not value:\n"
    "        raise ValueError({w!r})\n"
    "    return [{w!r}, value, {i}]\n\n"
)


def project_name(rng: random.Random, taken: list[str]) -> str:
    while True:
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}{rng.choice(SUFFIXES)}"
        if name not in taken:
            return name


def metadata(rng: random.Random, name: str, version: str, others: list[str]) -> str:
    display = name.replace("_", "-")
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {display}",
        f"Version: {version}",
        f"Summary: {' '.join(rng.choices(WORDS, k=8)).capitalize()}.",
        f"Home-page: https://example.org/{display}",
        f"Author: {rng.choice(WORDS).capitalize()} {rng.choice(WORDS).capitalize()}",
        f"Author-email: dev@{display}.example.org",
        "License: MIT",
        *(f"Classifier: {c}" for c in sorted(rng.sample(CLASSIFIERS, rng.randint(4, 10)))),
    ]
    python = rng.choice(PYTHONS)
    if python is not None:
        lines.append(f"Requires-Python: {python}")
    for other in rng.sample(others, min(len(others), rng.randint(0, 6))):
        lower = rng.randint(0, 3)
        lines.append(f"Requires-Dist: {other.replace('_', '-')}>={lower}.{rng.randint(0, 9)}")
    if rng.random() < 0.5:
        lines += ["Provides-Extra: test", 'Requires-Dist: pytest>=7; extra == "test"']
    if rng.random() < 0.3:
        lines.append('Requires-Dist: tomli>=1.1; python_version < "3.11"')
    lines.append("Description-Content-Type: text/markdown")
    paragraphs = [
        " ".join(rng.choices(WORDS, k=rng.randint(30, 120))) for _ in range(rng.randint(3, 30))
    ]
    body = f"# {display}\n\n" + "\n\n".join(paragraphs) + "\n"
    return "\n".join(lines) + "\n\n" + body


def modules(rng: random.Random, name: str, version: str) -> dict[str, bytes]:
    files = {f"{name}/__init__.py": f'__version__ = "{version}"\n'.encode()}
    for m in range(rng.randint(2, 12)):
        words = rng.choices(WORDS, k=rng.randint(10, 150))
        text = "".join(CODE.format(w=w, i=i) for i, w in enumerate(words))
        files[f"{name}/{rng.choice(WORDS)}_{m}.py"] = text.encode()
    return files


def generate_wheels(directory: Path, count: int = 2000, seed: int = 503) -> list[Path]:
    """*count* wheels into *directory*: about one project per seven wheels."""
    rng = random.Random(seed)
    names: list[str] = []
    written: list[Path] = []
    while len(written) < count:
        name = project_name(rng, names)
        written += release_wheels(directory, rng, name, names, rng.randint(1, 12))
        names.append(name)
    for extra in written[count:]:
        extra.unlink()
    return written[:count]


def release_wheels(
    directory: Path,
    rng: random.Random,
    name: str,
    others: list[str],
    releases: int,
    *,
    first: int = 0,
    compiled: bool | None = None,
) -> list[Path]:
    """The wheels of *releases* releases of *name* (versions ``1.<first>.x`` on), a
    compiled project's or not (*compiled*; None: one project in five is)."""
    if compiled is None:
        compiled = rng.random() < 0.2
    tags = (
        [f"{py}-{platform}" for py in CPYTHONS for platform in rng.sample(PLATFORMS, 2)]
        if compiled
        else ["py3-none-any"]
    )
    written = []
    for minor in range(first, first + releases):
        version = f"1.{minor}.{rng.randint(0, 3)}"
        text = metadata(rng, name, version, others)
        files = modules(rng, name, version)
        for tag in tags:
            members = dict(files)
            if compiled:
                members[f"{name}/_speedups.so"] = rng.randbytes(rng.randint(10_000, 120_000))
            written.append(
                write_wheel(
                    directory,
                    name,
                    version,
                    None,
                    None,
                    files=members,
                    metadata=text,
                    deflate=True,
                    tag=tag,
                )
            )
    return written


def added_wheels(directory: Path, existing: Path, seed: int = 504) -> list[Path]:
    """Ten more pure-Python wheels, into *directory*, for the folder *existing* made
    by :func:`generate_wheels`: a new release of six of its projects, and four new
    projects."""
    rng = random.Random(seed)
    projects = sorted({p.name.split("-")[0] for p in existing.glob("*.whl")})
    written: list[Path] = []
    # Six projects when there are (a small folder may give one project two releases).
    picked = rng.sample(projects, 6) if len(projects) >= 6 else rng.choices(projects, k=6)
    for index, name in enumerate(picked):
        written += release_wheels(directory, rng, name, [], 1, first=50 + index, compiled=False)
    for name in ("fresh_alpha", "fresh_beta", "fresh_gamma", "fresh_delta"):
        written += release_wheels(directory, rng, name, projects[:20], 1, compiled=False)
    return written
