"""The third-party provider plugin host: trust, isolation, running, failure modes.

Everything installs offline: pip gets ``PIP_NO_INDEX=1`` and ``PIP_FIND_LINKS``
pointing at the corpus plugin's dist folder and at one wheel built here that holds
every misbehaving test plugin (one module each), so the whole file creates only a
few environments.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path

import pytest

from paths import CORPUS
from wheelwise.providers import plugin_env
from wheelwise.providers.plugin_env import MARKER, cache_root, env_key
from wheelwise.providers.plugin_runner import PluginFailure, parse_answer
from wheelwise.providers.plugin_trust import load_trust_config
from wheelwise.providers.plugins import InvalidPluginSpec, PluginSpec, run_plugins
from wheelwise.variants import SupportedProperties, VariantMetadata, rank_variants

PLUGIN_DIST = CORPUS / "test-plugin-package" / "dist"
TEST_PACKAGE_JSON = CORPUS / "test-package" / "dist" / "test_package-0-variants.json"
SUITE = "wwtest-plugins"

# One module per test plugin; the namespace of each spec is the module's suffix.
_CONFIG = """
from dataclasses import dataclass, field


@dataclass
class Config:
    name: str
    values: list
    multi_value: bool = False
"""

SUITE_MODULES: dict[str, str] = {
    "ww_class_plugin": _CONFIG
    + """
class Plugin:
    namespace = "class_plugin"

    def __init__(self):
        self.ready = True  # methods below need an instance

    def get_all_configs(self):
        assert self.ready
        return [Config("level", ["1", "2", "3"]), Config("arch", ["a", "b"], True)]

    def get_supported_configs(self):
        assert self.ready
        return [Config("arch", ["b", "a"], True), Config("level", ["2", "1"])]
""",
    "ww_crash": 'raise RuntimeError("boom at import")\n',
    "ww_hang": """
import os, subprocess, sys, time
from pathlib import Path

piddir = Path(os.environ["WWTEST_PIDDIR"])
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
(piddir / "pids").write_text(f"{os.getpid()} {grandchild.pid}")
time.sleep(60)
""",
    # Prints junk to stdout, from Python and at the file descriptor level: the host
    # keeps the answer on its own channel, so this plugin still works.
    "ww_chatty": _CONFIG
    + """
import os, sys

print("chatty: {not json")
os.write(1, b"more junk on fd 1\\n")
namespace = "chatty"


def get_all_configs():
    print("hello from get_all_configs")
    return [Config("mode", ["x", "y"])]


def get_supported_configs():
    sys.stdout.write("}}}")
    return [Config("mode", ["y"])]
""",
    # Corrupts the answer itself: the host's JSON writer now emits garbage.
    "ww_garbage": _CONFIG
    + """
import json

json.dumps = lambda *args, **kwargs: "this is {not JSON"
namespace = "garbage"


def get_all_configs():
    return [Config("mode", ["x"])]


def get_supported_configs():
    return [Config("mode", ["x"])]
""",
    "ww_liar": _CONFIG
    + """
namespace = "liar"


def get_all_configs():
    return [Config("mode", ["x", "y"])]


def get_supported_configs():
    return [Config("mode", ["y", "z"])]
""",
    "ww_badname": _CONFIG
    + """
namespace = "badname"


def get_all_configs():
    return [Config("Bad Name!", ["x"])]


def get_supported_configs():
    return [Config("Bad Name!", ["x"])]
""",
    "ww_badvalues": _CONFIG
    + """
namespace = "badvalues"


def get_all_configs():
    return [Config("mode", [1, 2])]


def get_supported_configs():
    return []
""",
    "ww_wrongns": _CONFIG
    + """
namespace = "someone_else"


def get_all_configs():
    return [Config("mode", ["x"])]


def get_supported_configs():
    return [Config("mode", ["x"])]
""",
    "ww_huge": _CONFIG
    + """
namespace = "huge"


def get_all_configs():
    return [Config("mode", [f"v{i}" for i in range(300_000)])]


def get_supported_configs():
    return []
""",
    "ww_silent_exit": "import os\nos._exit(0)\n",
    "ww_nothing": _CONFIG
    + """
namespace = "nothing"


def get_all_configs():
    return [Config("mode", ["x"])]


def get_supported_configs():
    return []
""",
}


def suite_spec(module: str, *, attr: str = "", **kwargs: object) -> PluginSpec:
    namespace = {"ww_class_plugin": "class_plugin"}.get(module, module.removeprefix("ww_"))
    api = f"{module}:{attr}" if attr else module
    return PluginSpec(namespace, (SUITE,), plugin_api=api, **kwargs)  # type: ignore[arg-type]


def trust(*specs: PluginSpec) -> set[str]:
    """The ``--allow-provider`` values that trust exactly these plugins."""
    return {
        f"{s.namespace}{':' + s.plugin_api if s.plugin_api else ''}={s.requires[0]}" for s in specs
    }


INSTALLABLE = "installable_plugin=test-plugin-package"
NON_EXISTING = "non_existing_plugin=do-not-install-me"


def build_suite_wheel(directory: Path) -> Path:
    """A real, installable wheel holding every module of SUITE_MODULES."""
    dist_info = "wwtest_plugins-1.dist-info"
    members = {f"{name}.py": source.encode() for name, source in SUITE_MODULES.items()}
    members[f"{dist_info}/METADATA"] = b"Metadata-Version: 2.1\nName: wwtest-plugins\nVersion: 1\n"
    members[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for name, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = directory / "wwtest_plugins-1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def corpus_specs() -> list[PluginSpec]:
    metadata = VariantMetadata.from_json(TEST_PACKAGE_JSON.read_bytes())
    return [PluginSpec.from_provider(ns, info) for ns, info in metadata.providers.items()]


def set_offline_pip(mp: pytest.MonkeyPatch, *links: Path) -> None:
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("PIP_FIND_LINKS", " ".join(str(link) for link in links))
    mp.setenv("PIP_CONFIG_FILE", os.devnull)
    mp.delenv("PIP_INDEX_URL", raising=False)
    mp.delenv("PIP_EXTRA_INDEX_URL", raising=False)


@pytest.fixture(scope="module")
def suite_links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("links")
    build_suite_wheel(directory)
    return directory


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory, suite_links: Path) -> Path:
    """A cache folder whose two environments (corpus plugin, suite) are built once."""
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WHEELWISE_CACHE_DIR", str(cache))
        mp.setenv("WHEELWISE_CONFIG", str(cache / "no-config.toml"))
        set_offline_pip(mp, PLUGIN_DIST, suite_links)
        specs = [corpus_specs()[0], suite_spec("ww_class_plugin", attr="Plugin")]
        reports = run_plugins(
            specs,
            allowed=trust(*specs),
            enabled=(),
        )
    assert [r.status for r in reports.values()] == ["ok", "ok"], reports
    return cache


@pytest.fixture(autouse=True)
def isolated(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shared_cache: Path, suite_links: Path
) -> None:
    """No user config, the shared cache, and pip that can only see local wheels."""
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(shared_cache))
    monkeypatch.setenv("WHEELWISE_CONFIG", str(tmp_path / "no-config.toml"))
    set_offline_pip(monkeypatch, PLUGIN_DIST, suite_links)


def env_dirs(cache: Path) -> list[Path]:
    plugins = cache / "plugins"
    return sorted(p for p in plugins.iterdir() if p.is_dir()) if plugins.exists() else []


# -- the corpus plugin ------------------------------------------------------------


@pytest.mark.slow
def test_untrusted_corpus_plugin_is_refused_with_how_to_opt_in() -> None:
    reports = run_plugins(corpus_specs(), allowed=(), enabled=())
    report = reports["installable_plugin"]
    assert report.status == "unavailable"
    assert report.source == "plugin test-plugin-package"
    assert "--allow-provider installable_plugin" in report.detail
    assert "[providers] allow in" in report.detail
    assert "no-config.toml" in report.detail
    assert report.features == {}


def test_trusted_corpus_plugin_ranks_the_test_package(shared_cache: Path) -> None:
    reports = run_plugins(corpus_specs(), allowed={INSTALLABLE}, enabled=())
    report = reports["installable_plugin"]
    assert report.status == "ok", report.detail
    assert report.features == {"feat1": ("val1c", "val1b")}
    assert str(cache_root()) == str(shared_cache / "plugins")
    assert "test_plugin_package in " in report.detail
    metadata = VariantMetadata.from_json(TEST_PACKAGE_JSON.read_bytes())
    supported = SupportedProperties({"installable_plugin": report.features})
    assert rank_variants(metadata, supported).order == ("60567bd9", "foo", "null")


def test_optional_provider_stays_off_and_is_never_installed(shared_cache: Path) -> None:
    before = env_dirs(shared_cache)
    reports = run_plugins(corpus_specs(), allowed={INSTALLABLE, NON_EXISTING}, enabled=())
    report = reports["non_existing_plugin"]
    assert report.status == "unavailable"
    assert report.source == "plugin do-not-install-me"
    assert "--enable-provider non_existing_plugin" in report.detail
    assert "--allow-provider" not in report.detail  # already trusted
    assert env_dirs(shared_cache) == before
    untrusted = run_plugins(corpus_specs(), allowed=(), enabled=())["non_existing_plugin"]
    assert "--enable-provider non_existing_plugin --allow-provider non_existing_plugin" in (
        untrusted.detail
    )


def test_enabled_optional_provider_must_still_be_trusted() -> None:
    report = run_plugins(corpus_specs(), allowed=(), enabled={"non_existing_plugin"})[
        "non_existing_plugin"
    ]
    assert report.status == "unavailable"
    assert "--allow-provider non_existing_plugin" in report.detail


def test_config_file_allowlist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[providers]\nallow = ["installable_plugin=test-plugin-package"]\n', encoding="utf-8"
    )
    monkeypatch.setenv("WHEELWISE_CONFIG", str(config))
    reports = run_plugins(corpus_specs(), allowed=(), enabled=())
    assert reports["installable_plugin"].status == "ok"
    assert reports["installable_plugin"].features == {"feat1": ("val1c", "val1b")}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[providers\n", "cannot read"),
        ('[providers]\nallow = "installable_plugin"\n', "must be a list"),
        ("providers = 3\n", "must be a list"),
        ('[providers]\nallow = ["installable_plugin=no such!"]\n', "allow entry"),
    ],
)
def test_broken_config_file_trusts_nothing_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, problem: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    monkeypatch.setenv("WHEELWISE_CONFIG", str(config))
    assert load_trust_config().entries == ()
    report = run_plugins(corpus_specs(), allowed=(), enabled=())["installable_plugin"]
    assert report.status == "unavailable"
    assert problem in report.detail


def test_default_config_location_is_per_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WHEELWISE_CONFIG")
    path = load_trust_config().path
    assert path.name == "config.toml"
    assert path.parent.name == "wheelwise"


def test_enable_if_false_is_unavailable_and_environment_overrides() -> None:
    spec = PluginSpec(
        "gated", ("never-installed",), enable_if='sys_platform == "plan9"', optional=False
    )
    report = run_plugins([spec], allowed={"gated"}, enabled=())["gated"]
    assert report.status == "unavailable"
    assert report.detail == "enable-if 'sys_platform == \"plan9\"' is false here"
    # Against a target environment where it holds, the plugin goes on to the trust check.
    target = {"sys_platform": "plan9"}
    report = run_plugins([spec], allowed=(), enabled=(), environment=target)["gated"]
    assert report.status == "unavailable"
    assert "--allow-provider gated" in report.detail


def test_invalid_enable_if_is_an_error() -> None:
    spec = PluginSpec("gated", ("x",), enable_if="sys_platform ==")
    report = run_plugins([spec], allowed={"gated"}, enabled=())["gated"]
    assert report.status == "error"
    assert "invalid enable-if" in report.detail


# -- misbehaving plugins ------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except (OSError, IndexError):
        return True


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")
def test_bad_plugins_are_contained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WWTEST_PIDDIR", str(tmp_path))
    specs = [
        corpus_specs()[0],
        suite_spec("ww_class_plugin", attr="Plugin"),
        suite_spec("ww_crash"),
        suite_spec("ww_hang"),
        suite_spec("ww_chatty"),
        suite_spec("ww_garbage"),
        suite_spec("ww_liar"),
        suite_spec("ww_badname"),
        suite_spec("ww_badvalues"),
        suite_spec("ww_wrongns"),
        suite_spec("ww_huge"),
        suite_spec("ww_silent_exit"),
        suite_spec("ww_nothing"),
    ]
    allowed = trust(*specs)
    start = time.monotonic()
    reports = run_plugins(specs, allowed=allowed, enabled=(), timeout=2.0)
    elapsed = time.monotonic() - start
    assert list(reports) == [spec.namespace for spec in specs]
    statuses = {ns: report.status for ns, report in reports.items()}
    assert statuses == {
        "installable_plugin": "ok",
        "class_plugin": "ok",
        "crash": "error",
        "hang": "error",
        "chatty": "ok",
        "garbage": "error",
        "liar": "error",
        "badname": "error",
        "badvalues": "error",
        "wrongns": "error",
        "huge": "error",
        "silent_exit": "error",
        "nothing": "unavailable",
    }, {ns: r.detail for ns, r in reports.items()}
    detail = {ns: report.detail for ns, report in reports.items()}

    assert reports["installable_plugin"].features == {"feat1": ("val1c", "val1b")}
    # Class-style: instantiated, and both lists kept in the plugin's order.
    assert reports["class_plugin"].features == {"arch": ("b", "a"), "level": ("2", "1")}
    assert reports["class_plugin"].detail.startswith("wwtest-plugins 1 from file://")
    assert ", ww_class_plugin:Plugin in " in reports["class_plugin"].detail
    assert reports["chatty"].features == {"mode": ("y",)}
    assert all(r.features == {} for r in reports.values() if r.status != "ok")

    assert detail["crash"] == (
        "plugin ww_crash: exited with status 1: "
        "importing 'ww_crash' failed: RuntimeError: boom at import"
    )
    assert detail["hang"] == "plugin ww_hang: no answer within 2 s; killed"
    assert "not a JSON document" in detail["garbage"]
    assert "supported values ['z'] of 'mode' are not among all configs" in detail["liar"]
    assert "Bad Name!" in detail["badname"]
    assert "values of 'mode' are not a list of strings" in detail["badvalues"]
    assert "declares namespace 'someone_else'" in detail["wrongns"]
    assert "exceeds the 1024 KiB limit" in detail["huge"]
    assert "exited without an answer" in detail["silent_exit"]
    assert detail["nothing"].endswith("nothing supported here")

    # The hang was cut at the timeout, with everything it started.
    assert elapsed < 8, elapsed
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    deadline = time.monotonic() + 3
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_invalid_provider_information_is_an_error() -> None:
    specs = [
        PluginSpec("badreq", ("not a requirement!!",)),
        PluginSpec("badapi", ("wwtest-plugins",), plugin_api="ww-crash:x"),
        PluginSpec("norequires", ()),
        PluginSpec("filtered", ('wwtest-plugins; python_version < "3"',)),
    ]
    reports = run_plugins(specs, allowed={s.namespace for s in specs}, enabled=())
    assert {r.status for r in reports.values()} == {"error"}
    assert "invalid requirement 'not a requirement!!'" in reports["badreq"].detail
    assert "invalid plugin-api object reference 'ww-crash:x'" in reports["badapi"].detail
    assert "no requirement applies" in reports["norequires"].detail
    assert "no requirement applies" in reports["filtered"].detail


def test_conflicting_providers_for_one_namespace() -> None:
    specs = [PluginSpec("same", ("a",)), PluginSpec("same", ("b",)), PluginSpec("same", ("a",))]
    reports = run_plugins(specs, allowed={"same"}, enabled=())
    assert list(reports) == ["same"]
    assert reports["same"].status == "error"
    assert "two different providers" in reports["same"].detail


# -- environments -------------------------------------------------------------------


@pytest.mark.slow
def test_environment_is_reused_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    links = tmp_path / "links"
    shutil.copytree(PLUGIN_DIST, links)
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(cache))
    set_offline_pip(monkeypatch, links)
    spec = corpus_specs()[0]
    first = run_plugins([spec], allowed={INSTALLABLE}, enabled=())
    assert first["installable_plugin"].status == "ok"
    (env,) = env_dirs(cache)
    assert env.name == env_key(("test-plugin-package",))
    assert json.loads((env / MARKER).read_text())["requires"] == ["test-plugin-package"]

    shutil.rmtree(links)  # pip could not install it again
    calls: list[object] = []
    monkeypatch.setattr(plugin_env, "_create_and_install", lambda *a: calls.append(a))
    second = run_plugins([spec], allowed={INSTALLABLE}, enabled=())
    assert second == first
    assert calls == []
    assert env_dirs(cache) == [env]


def test_failed_install_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(cache))
    set_offline_pip(monkeypatch, tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    reports = run_plugins(
        corpus_specs(),
        allowed={NON_EXISTING},
        enabled={"non_existing_plugin"},
    )
    report = reports["non_existing_plugin"]
    assert report.status == "error"
    assert report.detail.startswith("cannot install the plugin: pip install do-not-install-me")
    assert "No matching distribution found for do-not-install-me" in report.detail
    assert reports["installable_plugin"].status == "unavailable"  # not trusted
    leftovers = [p.name for p in (cache / "plugins").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []


def test_incomplete_environment_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(cache))
    key = env_key(("test-plugin-package",))
    # What a killed process could leave: a final folder without marker, a temp folder.
    (cache / "plugins" / key / "bin").mkdir(parents=True)
    (cache / "plugins" / f".{key}-abc.tmp").mkdir()
    report = run_plugins(corpus_specs(), allowed={INSTALLABLE}, enabled=())
    assert report["installable_plugin"].status == "ok"
    assert [p.name for p in env_dirs(cache)] == [key]
    assert (cache / "plugins" / key / MARKER).is_file()


def test_one_environment_is_built_once_for_concurrent_plugins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path))
    builds: list[str] = []
    real_build = plugin_env._build

    def counting_build(root: Path, key: str, *args: object) -> None:
        builds.append(key)
        real_build(root, key, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(plugin_env, "_build", counting_build)
    specs = [
        suite_spec("ww_class_plugin", attr="Plugin"),
        suite_spec("ww_chatty"),
        suite_spec("ww_nothing"),
    ]
    reports = run_plugins(specs, allowed=trust(*specs), enabled=())
    assert [r.status for r in reports.values()] == ["ok", "ok", "unavailable"]
    assert builds == [env_key((SUITE,))]
    assert [p.name for p in env_dirs(tmp_path)] == builds


@pytest.mark.slow
def test_environment_without_host_pip_uses_ensurepip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where wheelwise's own environment has no pip, the venv gets its own."""
    monkeypatch.setenv("WHEELWISE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(plugin_env, "_host_pip_usable", lambda: False)
    report = run_plugins(corpus_specs(), allowed={INSTALLABLE}, enabled=())
    assert report["installable_plugin"].features == {"feat1": ("val1c", "val1b")}
    (env,) = env_dirs(tmp_path)
    assert list((env / "lib").glob("python*/site-packages/pip"))


def test_env_key_ignores_order_and_duplicates() -> None:
    assert env_key(["b", "a"]) == env_key(["a", "b", "a"])
    assert env_key(["a"]) != env_key(["a", "b"])
    assert len(env_key(["a"])) == 32


# -- units --------------------------------------------------------------------------


def test_spec_from_provider_and_object_reference() -> None:
    metadata = VariantMetadata.from_json(TEST_PACKAGE_JSON.read_bytes())
    spec = PluginSpec.from_provider("installable_plugin", metadata.providers["installable_plugin"])
    assert spec == PluginSpec("installable_plugin", ("test-plugin-package",))
    assert spec.object_reference == "test_plugin_package"
    assert spec.source == "plugin test-plugin-package"
    optional = PluginSpec.from_provider(
        "non_existing_plugin", metadata.providers["non_existing_plugin"]
    )
    assert optional.optional

    derived = PluginSpec("ns", ('skipped; python_version < "3"', "My.Plugin_Pkg[x]>=1.0"))
    assert derived.install_requires() == ("My.Plugin_Pkg[x]>=1.0",)
    assert derived.object_reference == "my_plugin_pkg"
    explicit = PluginSpec("ns", ("pkg",), plugin_api="pkg.sub:Plugin.inner")
    assert explicit.object_reference == "pkg.sub:Plugin.inner"
    with pytest.raises(InvalidPluginSpec):
        _ = PluginSpec("ns", ("pkg",), plugin_api="pkg:").object_reference


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"junk", "not a JSON document"),
        (b"\xff\xfe", "not a JSON document"),
        (b"[]", "expected an object with 'all' and 'supported'"),
        (b'{"all": {}, "supported": []}', "get_all_configs() did not return a list"),
        (b'{"all": [{"values": []}], "supported": []}', "has no string 'name'"),
        (
            b'{"all": [{"name": "f", "values": ["a"], "multi_value": "no"}], "supported": []}',
            "multi_value of 'f' is not a bool",
        ),
        (
            b'{"all": [], "supported": [{"name": "f", "values": ["a"]}]}',
            "supported feature 'f' is not among all configs",
        ),
        (
            b'{"all": [{"name": "f", "values": ["a", "a"]}], "supported": []}',
            "duplicate values",
        ),
        (b'{"namespace": "x", "all": [], "supported": []}', "declares namespace 'x'"),
    ],
)
def test_parse_answer_rejects(raw: bytes, message: str) -> None:
    with pytest.raises(PluginFailure, match=None) as excinfo:
        parse_answer(raw, "ns")
    assert message in str(excinfo.value)


def test_parse_answer_accepts() -> None:
    raw = json.dumps(
        {
            "namespace": "ns",
            "all": [
                {"name": "f", "values": ["a", "b"], "multi_value": True},
                {"name": "g", "values": ["c"]},
            ],
            "supported": [
                {"name": "f", "values": ["b", "a"], "multi_value": True},
                {"name": "g", "values": []},
            ],
        }
    ).encode()
    answer = parse_answer(raw, "ns")
    assert answer.features == {"f": ("b", "a")}
    assert answer.all_configs[0].multi_value
