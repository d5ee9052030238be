"""Trust in third-party provider plugins names what runs, and what runs sees no secrets.

A namespace is trusted together with the requirement that provides it
(``--allow-provider NS=REQUIREMENT``): metadata that maps a trusted namespace to
another distribution or another ``plugin-api`` stops before anything is installed
or imported. Plugins and the pip that installs them get an environment without
credentials. Everything installs offline from local wheels.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clikit import run_wheelwise
from paths import CORPUS
from wheelwise.providers import plugin_env
from wheelwise.providers.plugin_environ import plugin_environ, strip_userinfo
from wheelwise.providers.plugin_trust import PluginTrustError, TrustEntry, parse_trust
from wheelwise.providers.plugins import PluginSpec, run_plugins

PLUGIN_DIST = CORPUS / "test-plugin-package" / "dist"
TEST_PACKAGE_DIST = CORPUS / "test-package" / "dist"
TEST_PACKAGE_JSON = TEST_PACKAGE_DIST / "test_package-0-variants.json"
TRUST = "installable_plugin=test-plugin-package"

# A plugin that records that it ran, what it sees of the environment, and whether
# a ~/.netrc is within reach; it answers like the corpus plugin.
SPY = """
import json, os
from dataclasses import dataclass
from pathlib import Path

namespace = "installable_plugin"


@dataclass
class Config:
    name: str
    values: list
    multi_value: bool = False


home = Path(os.path.expanduser("~"))
Path(os.environ["WWTEST_SPY_OUT"]).write_text(json.dumps({
    "environ": dict(os.environ),
    "home": str(home),
    "netrc": (home / ".netrc").exists(),
}))


def get_all_configs():
    return [Config("feat1", ["val1a", "val1b", "val1c"])]


def get_supported_configs():
    return [Config("feat1", ["val1c", "val1b"])]
"""


def make_plugin_wheel(directory: Path, name: str, module: str, source: str) -> Path:
    """A real, installable wheel of distribution *name* holding one module."""
    dist_info = f"{name.replace('-', '_')}-1.dist-info"
    members = {f"{module}.py": source.encode()}
    members[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1\n".encode()
    members[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for member, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    members[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name.replace('-', '_')}-1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


@pytest.fixture
def links(tmp_path: Path) -> Path:
    """Local wheels: the corpus plugin and ``evil-plugin`` (module ``evil``, a spy)."""
    directory = tmp_path / "links"
    directory.mkdir()
    for wheel in PLUGIN_DIST.glob("*.whl"):
        (directory / wheel.name).write_bytes(wheel.read_bytes())
    make_plugin_wheel(directory, "evil-plugin", "evil", SPY)
    make_plugin_wheel(directory, "spy-plugin", "spy_plugin", SPY)
    return directory


@pytest.fixture
def env(tmp_path: Path, links: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A fresh cache, no user config, pip that sees only *links*; also set here."""
    values = {
        "WHEELWISE_CACHE_DIR": str(tmp_path / "cache"),
        "WHEELWISE_CONFIG": str(tmp_path / "no-config.toml"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(links),
        "PIP_CONFIG_FILE": os.devnull,
        "WWTEST_SPY_OUT": str(tmp_path / "spy.json"),
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return {**os.environ, **values}


def plugin_envs(env: dict[str, str]) -> list[Path]:
    plugins = Path(env["WHEELWISE_CACHE_DIR"]) / "plugins"
    return [p for p in plugins.iterdir() if p.is_dir()] if plugins.exists() else []


def hijacking_metadata(tmp_path: Path, requires: str, plugin_api: str | None) -> Path:
    """The corpus package's metadata with ``installable_plugin`` mapped elsewhere."""
    doc = json.loads(TEST_PACKAGE_JSON.read_text())
    provider: dict[str, object] = {"requires": [requires]}
    if plugin_api is not None:
        provider["plugin-api"] = plugin_api
    doc["providers"]["installable_plugin"] = provider
    path = tmp_path / "other_package-0-variants.json"
    path.write_text(json.dumps(doc))
    return path


# -- trust names the plugin --------------------------------------------------------------

HIJACKS = [
    pytest.param("evil-plugin", "evil", id="another distribution"),
    pytest.param("evil-plugin", None, id="another distribution, default plugin-api"),
    pytest.param("test-plugin-package", "evil", id="another plugin-api"),
    pytest.param("test-plugin-package>=0", None, id="another requirement"),
]


@pytest.mark.parametrize(("requires", "api"), HIJACKS)
@pytest.mark.parametrize("trust", [TRUST, "installable_plugin"])
def test_trusted_namespace_mapped_to_another_plugin_stops(
    env: dict[str, str], tmp_path: Path, requires: str, api: str | None, trust: str
) -> None:
    spec = PluginSpec("installable_plugin", (requires,), plugin_api=api)
    with pytest.raises(PluginTrustError) as excinfo:
        run_plugins([spec], allowed={trust}, enabled=())
    message = str(excinfo.value)
    assert "'installable_plugin'" in message
    assert requires in message  # what the metadata asks for
    assert "--allow-provider" in message
    assert f"installable_plugin{':' + api if api else ''}={requires}" in message
    assert "\n" not in message
    # Nothing was installed, nothing imported.
    assert plugin_envs(env) == []
    assert not (tmp_path / "spy.json").exists()


def test_hijack_through_select_is_one_error_line(env: dict[str, str], tmp_path: Path) -> None:
    metadata = hijacking_metadata(tmp_path, "evil-plugin", "evil")
    proc = run_wheelwise(["select", str(metadata), "--allow-provider", TRUST], env)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("wheelwise: error: ")
    assert str(metadata) in line
    assert "'installable_plugin'" in line
    assert "trusted: test-plugin-package" in line  # what was trusted
    assert "asks for evil-plugin (plugin-api evil)" in line
    assert "--allow-provider installable_plugin:evil=evil-plugin" in line
    assert plugin_envs(env) == []
    assert not (tmp_path / "spy.json").exists()


def test_hijack_through_the_config_file_stops(env: dict[str, str], tmp_path: Path) -> None:
    config = Path(env["WHEELWISE_CONFIG"])
    config.write_text(f'[providers]\nallow = ["{TRUST}"]\n')
    spec = PluginSpec("installable_plugin", ("evil-plugin",), plugin_api="evil")
    with pytest.raises(PluginTrustError, match=r"no-config\.toml"):
        run_plugins([spec], allowed=(), enabled=())
    assert not (tmp_path / "spy.json").exists()
    # The plugin it names still runs.
    good = PluginSpec("installable_plugin", ("test-plugin-package",))
    report = run_plugins([good], allowed=(), enabled=())["installable_plugin"]
    assert report.status == "ok", report.detail


def test_trusting_the_other_plugin_explicitly_runs_it(env: dict[str, str], tmp_path: Path) -> None:
    spec = PluginSpec("installable_plugin", ("spy-plugin",))
    report = run_plugins([spec], allowed={"installable_plugin=spy-plugin"}, enabled=())
    assert report["installable_plugin"].status == "ok", report["installable_plugin"].detail
    assert (tmp_path / "spy.json").exists()


@pytest.mark.slow
def test_a_hash_pins_the_plugin_file(env: dict[str, str], tmp_path: Path, links: Path) -> None:
    wheel = links / "spy_plugin-1-py3-none-any.whl"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    spec = PluginSpec("installable_plugin", ("spy-plugin",))
    wrong = f"installable_plugin=spy-plugin --hash=sha256:{'0' * 64}"
    with pytest.raises(PluginTrustError) as excinfo:
        run_plugins([spec], allowed={wrong}, enabled=())
    message = str(excinfo.value)
    assert f"spy-plugin 1 from {wheel.as_uri()} has sha256:{digest}" in message
    assert f"add --hash=sha256:{digest} to the entry" in message
    assert not (tmp_path / "spy.json").exists()  # installed, never imported
    # Another entry may list the file's hash (one entry per wheel, as in pip).
    right = f"installable_plugin=spy-plugin --hash=sha256:{digest.upper()}"
    report = run_plugins([spec], allowed={wrong, right}, enabled=())["installable_plugin"]
    assert report.status == "ok", report.detail
    assert (tmp_path / "spy.json").exists()


def test_untrusted_namespace_says_how_to_trust_the_plugin(env: dict[str, str]) -> None:
    spec = PluginSpec("installable_plugin", ("test-plugin-package",))
    report = run_plugins([spec], allowed=(), enabled=())["installable_plugin"]
    assert report.status == "unavailable"
    assert f"--allow-provider {TRUST}" in report.detail
    assert plugin_envs(env) == []


def test_invalid_allow_provider_is_one_error_line(env: dict[str, str]) -> None:
    for bad in ("installable_plugin=not a requirement!!", "Bad-NS=x", "ns:1bad=x"):
        proc = run_wheelwise(["select", str(TEST_PACKAGE_JSON), "--allow-provider", bad], env)
        assert proc.returncode == 2, (bad, proc.stdout)
        assert proc.stderr.startswith("wheelwise: error: --allow-provider"), proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr


def test_parse_trust() -> None:
    entry = parse_trust("installable_plugin=Test_Plugin.Package")
    assert entry == TrustEntry("installable_plugin", "test-plugin-package", None)
    assert parse_trust("ns:pkg.sub:Plugin=pkg>=1").plugin_api == "pkg.sub:Plugin"
    assert parse_trust("ns").requirement is None
    hashed = parse_trust(f"ns=pkg  --hash=sha256:{'B' * 64} --hash=sha256:{'a' * 64}")
    assert hashed.hashes == ("a" * 64, "b" * 64)
    assert parse_trust(hashed.text()) == hashed
    for bad in ("ns=", "ns=pkg --hash=md5:00", f"ns=pkg --hash=sha256:{'0' * 63}"):
        with pytest.raises(PluginTrustError):
            parse_trust(bad)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_parse_trust_fuzz(text: str) -> None:
    try:
        entry = parse_trust(text)
    except PluginTrustError as exc:
        message = str(exc)
    else:
        assert entry.namespace
        assert parse_trust(entry.text()) == entry
        return
    assert "\n" not in message


# -- trust is shown -------------------------------------------------------------------


@pytest.mark.slow
def test_select_shows_which_plugin_answered(env: dict[str, str]) -> None:
    proc = run_wheelwise(["select", str(TEST_PACKAGE_JSON), "--allow-provider", TRUST], env)
    assert proc.returncode == 0, proc.stderr
    assert "selected: 60567bd9" in proc.stdout
    (line,) = [line for line in proc.stdout.splitlines() if "answered by" in line]
    assert "installable_plugin" in line
    assert "test-plugin-package 0" in line
    assert "test_plugin_package-0-py3-none-any.whl" in line  # where it came from
    assert f"trusted as {TRUST}" in line


def test_help_documents_the_trust_syntax_and_store(env: dict[str, str]) -> None:
    proc = run_wheelwise(["select", "--help"], env)
    assert "NS=REQUIREMENT" in proc.stdout
    assert "config.toml" in proc.stdout


# -- no credentials reach a plugin ----------------------------------------------------------

SECRETS = {
    "FOO_TOKEN": "tok-123",
    "MY_PASSWORD": "pw-123",
    "DB_SECRET": "sec-123",
    "SERVICE_API_KEY": "key-123",
    "AWS_ACCESS_KEY_ID": "AKIA123",
    "GITHUB_TOKEN": "gh-123",
    "SOME_CREDENTIALS": "cred-123",
}


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="HOME and netrc are POSIX here")
def test_plugin_and_its_installer_see_no_credentials(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, links: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine 127.0.0.1 login me password netrc-123\n")
    monkeypatch.setenv("HOME", str(home))
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    # pip still sees only the local wheels: an extra index that is never reached.
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "http://user:idx-123@127.0.0.1:9/simple/")
    monkeypatch.setenv("UV_INDEX_URL", "http://user:uv-123@127.0.0.1:9/simple/")
    installer_envs: list[dict[str, str]] = []
    real_run = plugin_env._run

    def spying_run(command: list[str], environ: dict[str, str], timeout: float) -> object:
        installer_envs.append(dict(environ))
        return real_run(command, environ, timeout)

    monkeypatch.setattr(plugin_env, "_run", spying_run)
    spec = PluginSpec("installable_plugin", ("spy-plugin",))
    report = run_plugins([spec], allowed={"installable_plugin=spy-plugin"}, enabled=())
    assert report["installable_plugin"].status == "ok", report["installable_plugin"].detail
    seen = json.loads((tmp_path / "spy.json").read_text())
    assert seen["netrc"] is False
    assert seen["home"] != str(home)
    (installer,) = installer_envs
    for environ in (seen["environ"], installer):
        text = json.dumps(environ)
        for secret in [*SECRETS.values(), "netrc-123", "idx-123", "uv-123"]:
            assert secret not in text
        assert not set(SECRETS) & set(environ)
        assert environ.get("HOME") != str(home)
        assert environ["NETRC"] != str(home / ".netrc")
        assert not Path(environ["NETRC"]).exists()
        assert environ["PATH"] == os.environ["PATH"]
    # What is not a secret stays: the index (without its user info), pip's settings.
    assert installer["PIP_EXTRA_INDEX_URL"] == "http://127.0.0.1:9/simple/"
    assert installer["PIP_FIND_LINKS"] == str(links)
    assert seen["environ"]["WWTEST_SPY_OUT"] == str(tmp_path / "spy.json")


def test_plugin_environ_keeps_hardware_overrides() -> None:
    parent = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "WHEELWISE_NVIDIA_DRIVER": "12.8",
        "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0",
        "GH_TOKEN": "x",
        "KEYRING_PASS": "x",
        "HTTPS_PROXY": "http://me:pw@proxy:3128",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "PIP_CERT": "/etc/ssl/ca.pem",
        "PIP_CLIENT_CERT": "/home/me/client.pem",
    }
    cleaned = plugin_environ(parent, Path("/nonexistent-home"))
    assert cleaned["PATH"] == "/bin"
    assert cleaned["LANG"] == "C.UTF-8"
    assert cleaned["WHEELWISE_NVIDIA_DRIVER"] == "12.8"
    assert cleaned["NV_VARIANT_PROVIDER_FORCE_SM_ARCH"] == "9.0"
    assert cleaned["HTTPS_PROXY"] == "http://proxy:3128"
    assert "GH_TOKEN" not in cleaned
    assert "KEYRING_PASS" not in cleaned
    assert "SSH_AUTH_SOCK" not in cleaned
    assert cleaned["PIP_CERT"] == "/etc/ssl/ca.pem"  # a CA bundle, not a secret
    assert "PIP_CLIENT_CERT" not in cleaned
    assert cleaned["HOME"] == "/nonexistent-home"


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.text(st.characters(blacklist_characters="/@", blacklist_categories=("Z", "C"))),
    st.text(st.characters(blacklist_characters="/@", blacklist_categories=("Z", "C"))),
    st.text(st.characters(blacklist_characters="@"), max_size=30),
)
def test_strip_userinfo_fuzz(user: str, password: str, rest: str) -> None:
    url = f"https://{user}:{password}@host.example/{rest}"
    stripped = strip_userinfo(url)
    assert stripped.startswith("https://host.example/")
    assert strip_userinfo(stripped) == stripped


# -- --require-hashes ---------------------------------------------------------------------


@pytest.mark.slow
def test_require_hashes_runs_no_plugin(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    common = ["install", "--dry-run", "--find-links", str(TEST_PACKAGE_DIST)]
    common += ["--index-url", str(tmp_path / "empty"), "--allow-provider", TRUST]
    # Hash-checking mode: the release pinned, with the hash of each of its wheels.
    hashes = "".join(
        f" --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}"
        for wheel in sorted(TEST_PACKAGE_DIST.glob("test_package-0-*.whl"))
    )
    pinned = tmp_path / "requirements.txt"
    pinned.write_text(f"test_package==0{hashes}\n")
    proc = run_wheelwise([*common, "-r", str(pinned), "--require-hashes"], env)
    assert proc.returncode == 0, proc.stderr
    assert "--require-hashes" in proc.stderr
    assert "installable_plugin" in proc.stderr
    assert plugin_envs(env) == []
    common.append("test_package")
    # Without it, the trusted plugin answers.
    proc = run_wheelwise(common, env)
    assert proc.returncode == 0, proc.stderr
    assert "60567bd9" in proc.stdout
    assert len(plugin_envs(env)) == 1
    # The plan says which plugin answered.
    assert "'installable_plugin' answered by the third-party plugin test-plugin-package 0" in (
        proc.stderr
    )
    assert f"trusted as {TRUST} (--allow-provider)" in proc.stderr


def test_hijack_through_install_stops_before_anything_runs(
    env: dict[str, str], tmp_path: Path
) -> None:
    dist = tmp_path / "dist"
    dist.mkdir()
    for wheel in TEST_PACKAGE_DIST.glob("*.whl"):
        (dist / wheel.name).write_bytes(wheel.read_bytes())
    hijacked = hijacking_metadata(tmp_path, "evil-plugin", "evil")
    hijacked.rename(dist / TEST_PACKAGE_JSON.name)
    (tmp_path / "empty").mkdir()
    args = ["install", "--dry-run", "--find-links", str(dist), "--index-url"]
    args += [str(tmp_path / "empty"), "--allow-provider", TRUST, "test_package"]
    proc = run_wheelwise(args, env)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("wheelwise: error: ")
    assert "asks for evil-plugin (plugin-api evil), but trusted: test-plugin-package" in (
        proc.stderr
    )
    assert plugin_envs(env) == []
    assert not (tmp_path / "spy.json").exists()
