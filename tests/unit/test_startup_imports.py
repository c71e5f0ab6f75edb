"""What a command's start-up imports (structure only; the time it takes is in bench/big.py).

Each check runs in a fresh interpreter and reads its ``sys.modules``: the CLI and its parser import
no transport, no TUI and no YAML; a pod's ServiceAccount connection imports the official client's
in-cluster loader and transport but not ``kubernetes.config.kube_config``, whose module-level imports
(oauthlib, requests_oauthlib, yaml) serve only kubeconfig users.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

HEAVY = ("urllib3", "requests", "requests_oauthlib", "oauthlib", "yaml", "textual", "kubernetes")


def loaded(code: str) -> set[str]:
    """The top-level packages (of HEAVY, and kube_config itself) that ``code`` leaves imported."""
    probe = code + textwrap.dedent(f"""
        import json, sys
        names = {{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r})
        names |= {{m for m in sys.modules if m == "kubernetes.config.kube_config"}}
        print(json.dumps(sorted(names)))
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_the_cli_and_its_parser_import_no_transport_tui_or_yaml():
    assert loaded("import rollguard.cli\nrollguard.cli.build_parser()\n") == set()


def test_a_serviceaccount_connection_does_not_import_the_kubeconfig_machinery(tmp_path):
    sa = tmp_path / "sa"
    sa.mkdir()
    for name, text in (("token", "t"), ("ca.crt", "x"), ("namespace", "ns")):
        (sa / name).write_text(text)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443",
           "KUBECONFIG": str(tmp_path / "absent")}  # fmt: skip
    got = loaded(textwrap.dedent(f"""
        from rollguard.client import Client
        from rollguard.kubeconfig import resolve
        connection = resolve(environ={env!r}, serviceaccount_dir={str(sa)!r})
        assert connection.in_cluster
        client = Client.from_connection(connection)
        assert client._api.configuration.host == "https://10.0.0.1:443", client._api.configuration.host
    """))
    assert {"kubernetes", "urllib3"} <= got  # the official client's configuration and transport
    assert not got & {"kubernetes.config.kube_config", "requests_oauthlib", "oauthlib", "yaml", "textual"}


def test_a_kubeconfig_connection_uses_the_official_loader(tmp_path):
    config = tmp_path / "config"
    config.write_text(json.dumps({
        "current-context": "a",
        "clusters": [{"name": "k", "cluster": {"server": "https://example.invalid:6443"}}],
        "users": [{"name": "u", "user": {"token": "abc"}}],
        "contexts": [{"name": "a", "context": {"cluster": "k", "user": "u"}}],
    }))  # fmt: skip
    got = loaded(textwrap.dedent(f"""
        from rollguard.client import Client
        client = Client.connect(kubeconfig={str(config)!r})
        cfg = client._api.configuration
        assert cfg.host == "https://example.invalid:6443" and cfg.api_key["authorization"] == "Bearer abc"
    """))
    assert {"kubernetes.config.kube_config", "yaml"} <= got and "textual" not in got
