"""Wheel filenames with an optional variant label (PEP 825 "Variant label").

``{name}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl``
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from packaging.tags import Tag, parse_tag
from packaging.utils import (
    BuildTag,
    NormalizedName,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.utils import InvalidWheelFilename as _PackagingInvalid
from packaging.version import Version

from wheelwise.variants.errors import InvalidWheelFilename
from wheelwise.variants.labels import LABEL_RE, NULL_LABEL, validate_label


@dataclass(frozen=True)
class WheelFilename:
    """A parsed wheel filename; ``str()`` gives back the exact original text."""

    distribution: str
    version_text: str
    build_tag: str | None
    python_tag: str
    abi_tag: str
    platform_tag: str
    variant_label: str | None

    @classmethod
    def parse(cls, filename: str) -> WheelFilename:
        if not filename.endswith(".whl"):
            raise InvalidWheelFilename(f"invalid wheel filename {filename!r}: must end with '.whl'")
        parts = filename[: -len(".whl")].split("-")
        label: str | None = None
        # Six parts are ambiguous: a build tag starts with a digit and a
        # Python tag never does, so the third part decides.
        if len(parts) == 7 or (len(parts) == 6 and not parts[2][:1].isdigit()):
            label = parts.pop()
            if not LABEL_RE.fullmatch(label):
                raise InvalidWheelFilename(
                    f"invalid wheel filename {filename!r}: variant label {label!r} "
                    "may only use a-z, 0-9, '_' and '.'"
                )
        if len(parts) not in (5, 6):
            raise InvalidWheelFilename(
                f"invalid wheel filename {filename!r}: expected "
                "name-version[-build]-python-abi-platform[-label].whl"
            )
        python_tag = parts[-3]
        if python_tag[:1].isdigit():
            raise InvalidWheelFilename(
                f"invalid wheel filename {filename!r}: Python tag {python_tag!r} "
                "must not start with a digit"
            )
        try:
            parse_wheel_filename("-".join(parts) + ".whl")
        except _PackagingInvalid as exc:
            raise InvalidWheelFilename(f"invalid wheel filename {filename!r}: {exc}") from None
        build = parts[2] if len(parts) == 6 else None
        return cls(parts[0], parts[1], build, python_tag, parts[-2], parts[-1], label)

    def __str__(self) -> str:
        parts = [self.distribution, self.version_text]
        if self.build_tag is not None:
            parts.append(self.build_tag)
        parts += [self.python_tag, self.abi_tag, self.platform_tag]
        if self.variant_label is not None:
            parts.append(self.variant_label)
        return "-".join(parts) + ".whl"

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.distribution)

    @cached_property
    def version(self) -> Version:
        return Version(self.version_text)

    @cached_property
    def build(self) -> BuildTag:
        return parse_wheel_filename(str(self.without_variant()))[2]

    @cached_property
    def tags(self) -> frozenset[Tag]:
        return parse_tag(f"{self.python_tag}-{self.abi_tag}-{self.platform_tag}")

    @property
    def is_variant(self) -> bool:
        return self.variant_label is not None

    @property
    def is_null_variant(self) -> bool:
        return self.variant_label == NULL_LABEL

    def with_variant(self, label: str | None) -> WheelFilename:
        """The same wheel named with another label (None: non-variant)."""
        if label is not None:
            validate_label(label)
        return WheelFilename(
            self.distribution,
            self.version_text,
            self.build_tag,
            self.python_tag,
            self.abi_tag,
            self.platform_tag,
            label,
        )

    def without_variant(self) -> WheelFilename:
        return self.with_variant(None)


def variants_json_filename(name: str, version: str | Version) -> str:
    """``{name}-{version}-variants.json`` with both parts normalized as in wheel names."""
    normalized = canonicalize_name(name).replace("-", "_")
    return f"{normalized}-{Version(str(version))}-variants.json"
