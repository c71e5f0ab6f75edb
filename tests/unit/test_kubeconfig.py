"""kubectl's kubeconfig rules (client-go tools/clientcmd/loader.go, merged_client_builder.go), pure and on files."""

from __future__ import annotations

import os

import pytest
import yaml

from rollguard.cluster.kubeconfig import loading_paths, merge, read, resolve
from rollguard.core.errors import RefusedError


def entry(kind: str, name: str, **body: str) -> dict:
    return {"name": name, kind: body}


def test_loading_paths_follow_kubeconfig_list_without_duplicates_or_empty_entries():
    env = {"KUBECONFIG": os.pathsep.join(["/a", "", "/b", "/a"])}
    assert loading_paths(None, env) == ["/a", "/b"]
    assert loading_paths("/explicit", env) == ["/explicit"]
    assert loading_paths(None, {}) == ["~/.kube/config"]


def test_first_file_wins_each_entry_whole_and_the_first_current_context():
    first = {"current-context": "", "users": [entry("user", "u", token="one")]}
    second = {
        "current-context": "b",
        "users": [entry("user", "u", token="two", **{"client-key": "k.pem"})],
        "contexts": [entry("context", "b", cluster="c", user="u")],
    }
    third = {"current-context": "c", "clusters": [entry("cluster", "c", server="https://x")]}
    merged = merge([("/d1/f", first), ("/d2/f", second), ("/d3/f", third)])
    # the second file's same-named user is discarded whole: no client-key slips in
    assert merged["users"] == [entry("user", "u", token="one")]
    assert merged["current-context"] == "b"  # the first file that *sets* it (an empty one does not)
    assert [c["name"] for c in merged["contexts"]] == ["b"]
    assert merged["clusters"][0]["cluster"]["server"] == "https://x"


def test_relative_paths_resolve_against_the_file_that_holds_the_entry():
    merged = merge([
        ("/etc/one/config", {"clusters": [entry("cluster", "c", **{"certificate-authority": "ca.crt"})]}),
        ("/home/me/two", {"users": [entry("user", "u", **{"client-key": "../k.pem", "tokenFile": "/abs/t"})]}),
    ])  # fmt: skip
    assert merged["clusters"][0]["cluster"]["certificate-authority"] == "/etc/one/ca.crt"
    assert merged["users"][0]["user"] == {"client-key": "/home/k.pem", "tokenFile": "/abs/t"}
    plugins = merge([("/etc/k/config", {"users": [
        entry("user", "rel", exec={"command": "./bin/helper"}), entry("user", "path", exec={"command": "oc"}),
    ]})])  # fmt: skip
    assert [u["user"]["exec"]["command"] for u in plugins["users"]] == ["/etc/k/bin/helper", "oc"]


def write(path, content: dict) -> str:
    path.write_text(yaml.safe_dump(content))
    return str(path)


def test_missing_files_are_skipped_but_an_explicit_one_must_exist(tmp_path):
    one = write(tmp_path / "one", {"current-context": "x"})
    merged = read(environ={"KUBECONFIG": os.pathsep.join([str(tmp_path / "gone"), one])})
    assert merged.files == (one,) and merged.missing == (str(tmp_path / "gone"),)
    with pytest.raises(RefusedError, match=r"--kubeconfig .* does not exist"):
        read(str(tmp_path / "gone"), environ={})


def test_an_empty_kubeconfig_is_named(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(RefusedError, match=r"kubeconfig .*empty holds no clusters"):
        resolve(kubeconfig=str(empty), environ={}, serviceaccount_dir=str(tmp_path / "no-sa"))


def test_unparsable_file_is_refused_naming_it(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(RefusedError, match=r"cannot read kubeconfig .*bad"):
        read(environ={"KUBECONFIG": str(bad)})


def test_unknown_context_lists_the_known_ones(tmp_path):
    cfg = write(tmp_path / "c", {
        "clusters": [entry("cluster", "k", server="https://x")],
        "contexts": [entry("context", "a", cluster="k"), entry("context", "b", cluster="k")],
    })  # fmt: skip
    with pytest.raises(RefusedError, match=r"context 'zz' is not in the kubeconfig.*a, b"):
        resolve(context="zz", environ={"KUBECONFIG": cfg}, serviceaccount_dir=str(tmp_path / "no-sa"))
    with pytest.raises(RefusedError, match="no current-context"):
        resolve(environ={"KUBECONFIG": cfg}, serviceaccount_dir=str(tmp_path / "no-sa"))


def serviceaccount(tmp_path, namespace: str = "from-pod"):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t")
    (sa / "ca.crt").write_text("x")
    (sa / "namespace").write_text(namespace)
    return str(sa)


POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def test_in_a_pod_without_kubeconfig_the_serviceaccount_and_its_namespace(tmp_path):
    sa = serviceaccount(tmp_path)
    env = {**POD_ENV, "KUBECONFIG": str(tmp_path / "absent")}
    conn = resolve(environ=env, serviceaccount_dir=sa)
    assert conn.in_cluster
    assert conn.namespace(None) == ("from-pod", "the pod's namespace")
    assert conn.namespace("given") == ("given", "--namespace")
    assert (
        resolve(environ={**env, "POD_NAMESPACE": "downward"}, serviceaccount_dir=sa).namespace(None)[0]
        == "downward"
    )


def test_in_a_pod_a_usable_kubeconfig_wins_and_the_pod_namespace_fills_in(tmp_path):
    sa = serviceaccount(tmp_path)
    cfg = write(tmp_path / "c", {
        "current-context": "a",
        "clusters": [entry("cluster", "k", server="https://x")],
        "contexts": [entry("context", "a", cluster="k")],
    })  # fmt: skip
    conn = resolve(environ={**POD_ENV, "KUBECONFIG": cfg}, serviceaccount_dir=sa)
    assert not conn.in_cluster and conn.context == "a"
    assert conn.namespace(None) == ("from-pod", "the pod's namespace")  # the context sets none
    outside = resolve(environ={"KUBECONFIG": cfg}, serviceaccount_dir=sa)
    assert outside.namespace(None)[0] == "default"
