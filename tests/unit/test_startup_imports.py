"""What a command's start-up imports (structure only; the time it takes is in bench/big.py).

Each check runs in a fresh interpreter and reads its ``sys.modules``: the CLI and its parser import
no transport, no TUI and no YAML, and a command line naming a subcommand builds (and imports) that
subcommand alone; a pod's ServiceAccount connection imports the official client's in-cluster loader and
transport but not ``kubernetes.config.kube_config``, whose module-level imports serve only kubeconfig
users; no connection imports ``requests``, ``oauthlib``, ``requests_oauthlib``, ``multiprocessing`` or
``importlib.metadata`` or ``certifi`` (the official transport's proxy check, kube_config's OIDC refresh,
the Configuration's pool size, urllib3's HTTP/2 check, the CA bundle used when no CA is configured: see
`rollguard.cluster.k8s`) until those paths run, and then they get the real libraries.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

HEAVY = ("urllib3", "requests", "requests_oauthlib", "oauthlib", "yaml", "textual", "kubernetes")


def loaded(code: str, *, env: dict[str, str] | None = None, modules: tuple[str, ...] = ()) -> set[str]:
    """The top-level packages (of HEAVY, and kube_config itself, and any of ``modules``) that ``code``
    leaves imported."""
    probe = code + textwrap.dedent(f"""
        import json, sys
        names = {{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})
        names |= {{m for m in sys.modules if m == "kubernetes.config.kube_config" or m in {modules!r}}}
        print(json.dumps(sorted(names)))
    """)
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_the_cli_and_its_parser_import_no_transport_tui_or_yaml():
    assert loaded("import rollguard.cli\nrollguard.cli.build_parser()\n") == set()


OTHER_COMMANDS = tuple(
    f"rollguard.commands.{m}" for m in ("rollout", "resume", "revert", "redeploy", "drift_check", "tui")
)


def test_a_command_line_naming_a_subcommand_builds_that_subcommand_alone():
    code = textwrap.dedent("""
        import rollguard.cli
        parser = rollguard.cli.build_parser(only=rollguard.cli.command_module("status"))
        args = parser.parse_args(["status", "-n", "shop", "-o", "json"])
        assert (args.command, args.namespace, args.output) == ("status", "shop", "json"), args
    """)
    assert loaded(code, modules=(*OTHER_COMMANDS, "rollguard.state.assessment")) == set()
    # the whole parser still knows them all (`rollguard --help`, an unknown command's error)
    every = loaded("import rollguard.cli\nrollguard.cli.build_parser()\n", modules=OTHER_COMMANDS)
    assert every == set(OTHER_COMMANDS)


def test_subcommand_names_map_to_their_modules():
    from rollguard.cli import SUBCOMMANDS, command_module

    assert command_module("drift-check") == "drift_check" and command_module("status") == "status"
    assert (
        command_module("drift_check") is None
        and command_module("--help") is None
        and command_module(None) is None
    )
    assert {command_module(m.replace("_", "-")) for m in SUBCOMMANDS} == set(SUBCOMMANDS)


def test_a_serviceaccount_connection_does_not_import_the_kubeconfig_machinery(tmp_path):
    sa = tmp_path / "sa"
    sa.mkdir()
    for name, text in (("token", "t"), ("ca.crt", "x"), ("namespace", "ns")):
        (sa / name).write_text(text)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
           "KUBECONFIG": str(tmp_path / "absent")}  # fmt: skip
    got = loaded(
        textwrap.dedent(f"""
        from rollguard.cluster.client import Client
        from rollguard.cluster.kubeconfig import resolve
        connection = resolve(environ={env!r}, serviceaccount_dir={str(sa)!r})
        assert connection.in_cluster
        client = Client.from_connection(connection)
        assert client._api.configuration.host == "https://10.0.0.1:443", client._api.configuration.host
    """)
    )
    assert {"kubernetes", "urllib3"} <= got  # the official client's configuration and transport
    assert not got & {
        "kubernetes.config.kube_config",
        "requests",
        "requests_oauthlib",
        "oauthlib",
        "yaml",
        "textual",
    }


def kubeconfig_file(tmp_path, server: str = "https://example.invalid:6443") -> str:
    config = tmp_path / "config"
    config.write_text(json.dumps({
        "current-context": "a",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "abc"}}],
        "contexts": [{"name": "a", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    return str(config)


def test_a_kubeconfig_connection_uses_the_official_loader(tmp_path):
    got = loaded(
        textwrap.dedent(f"""
        from rollguard.cluster.client import Client
        client = Client.connect(kubeconfig={kubeconfig_file(tmp_path)!r})
        cfg = client._api.configuration
        assert cfg.host == "https://example.invalid:6443" and cfg.api_key["authorization"] == "Bearer abc"
    """)
    )
    assert {"kubernetes.config.kube_config", "yaml"} <= got
    assert not got & {"requests", "requests_oauthlib", "oauthlib", "textual"}


def test_a_connection_without_a_ca_still_gets_mozillas_bundle(tmp_path):
    """No certificate-authority in the kubeconfig: the official transport verifies against certifi's
    bundle, imported then; with one (the sandbox's, a pod's ca.crt) certifi is never imported."""
    code = textwrap.dedent(f"""
        from rollguard.cluster.client import Client
        pool = Client.connect(kubeconfig={kubeconfig_file(tmp_path)!r})._api.rest_client.pool_manager
        import certifi
        assert pool.connection_pool_kw["ca_certs"] == certifi.where(), pool.connection_pool_kw
    """)
    assert "certifi" in loaded(code, modules=("certifi",))
    sa = tmp_path / "sa"
    sa.mkdir()
    for name, text in (("token", "t"), ("ca.crt", "x"), ("namespace", "ns")):
        (sa / name).write_text(text)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    in_pod = textwrap.dedent(f"""
        from rollguard.cluster.client import Client
        from rollguard.cluster.kubeconfig import resolve
        Client.from_connection(resolve(environ={env!r}, serviceaccount_dir={str(sa)!r}))
    """)
    assert "certifi" not in loaded(in_pod, modules=("certifi",))


def test_a_connection_imports_neither_multiprocessing_nor_importlib_metadata(tmp_path):
    """The official Configuration's default pool size (multiprocessing.cpu_count) and urllib3's HTTP/2
    version check (importlib.metadata.version) come out as they would, without those imports."""
    code = textwrap.dedent(f"""
        import os
        from rollguard.cluster import k8s
        from rollguard.cluster.client import Client
        Client.connect(kubeconfig={kubeconfig_file(tmp_path)!r})
        assert k8s.module("client.configuration").Configuration().connection_pool_maxsize == os.cpu_count() * 5
    """)
    assert not loaded(code, modules=("multiprocessing", "importlib.metadata")) & {
        "multiprocessing",
        "importlib.metadata",
    }
    later = code + textwrap.dedent("""
        import urllib3.http2
        assert urllib3.http2.version("urllib3") == urllib3.__version__
        assert k8s.module("client.configuration").multiprocessing.Process  # the rest of it, when asked for
    """)
    assert {"multiprocessing", "importlib.metadata"} <= loaded(
        later, modules=("multiprocessing", "importlib.metadata")
    )


def test_a_proxy_from_the_environment_still_gets_the_official_proxy_check(tmp_path):
    """HTTPS_PROXY (read by the official Configuration) makes its transport call requests'
    should_bypass_proxies: through the stand-in that imports the real one, and the pool is a proxy's."""
    code = textwrap.dedent(f"""
        import urllib3
        from rollguard.cluster.client import Client
        pool = Client.connect(kubeconfig={kubeconfig_file(tmp_path)!r})._api.rest_client.pool_manager
        print(type(pool).__name__, getattr(getattr(pool, "proxy", None), "host", None))
    """)
    direct = {name: "" for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")}
    proxied = {**direct, "HTTPS_PROXY": "http://proxy.invalid:3128"}
    for env, pool, needs_requests in (
        (direct, "PoolManager None", False),
        (proxied, "ProxyManager proxy.invalid", True),
    ):
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **env},
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == pool, env
        assert ("requests" in loaded(code, env=env)) is needs_requests, env


def test_the_oidc_refresh_names_resolve_to_the_real_libraries(tmp_path):
    """kube_config's OAuth2Session and oauthlib.oauth2 (its OIDC refresh) are the real ones when used, and
    anything importing those libraries afterwards gets the real modules, not the stand-ins."""
    code = textwrap.dedent(f"""
        import sys
        from rollguard.cluster import k8s
        from rollguard.cluster.client import Client
        Client.connect(kubeconfig={kubeconfig_file(tmp_path)!r})
        kube_config = k8s.module("config.kube_config")
        assert "requests_oauthlib" not in sys.modules and "oauthlib" not in sys.modules
        session = kube_config.OAuth2Session(client_id="x")
        error = kube_config.oauthlib.oauth2.rfc6749.errors.InvalidClientIdError
        import oauthlib.oauth2, requests, requests.utils, requests_oauthlib
        assert isinstance(session, requests_oauthlib.OAuth2Session), type(session)
        assert error is oauthlib.oauth2.rfc6749.errors.InvalidClientIdError
        assert requests.Session and requests.utils.should_bypass_proxies.__module__ == "requests.utils"
        assert not any(type(m).__name__ == "_Later" for m in list(sys.modules.values()))
    """)
    assert {"requests", "requests_oauthlib", "oauthlib"} <= loaded(code)


def test_the_console_script_keeps_the_collector_out_of_start_up_and_exit(tmp_path):
    """`rollguard` is `rollguard.cli:run`: `main` with the cyclic collector off while the process starts
    (imports), back on (with start-up's objects frozen) once START_UP_SECONDS are over, so that a long
    run collects as usual; the exit code is main's, argparse's exits included."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["rollguard"] == "rollguard.cli:run"
    code = textwrap.dedent("""
        import gc, time
        import rollguard.cli as cli
        cli.START_UP_SECONDS = 0.2
        seen = []
        def main(argv=None):
            seen.append(gc.isenabled())
            deadline = time.monotonic() + 30
            while not gc.isenabled() and time.monotonic() < deadline:  # the start-up timer's, at 0.2 s
                time.sleep(0.01)
            seen.append(gc.isenabled())
            seen.append(gc.get_freeze_count() > 0)
            print(seen, flush=True)
            return 3
        cli.main = main
        cli.run()
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout.strip()) == (3, "[False, True, True]"), result.stderr
    version = subprocess.run(
        [sys.executable, "-m", "rollguard.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert (version.returncode, version.stdout.split()[0]) == (0, "rollguard"), version.stderr
