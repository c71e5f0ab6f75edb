"""tekton/rbac.yaml on the real API server: enough for a rollout, its revert and a repair, and no more.

The file is applied as written (its placeholder namespaces replaced) into two namespaces of the
sandbox: `<ns>-cd`, where the `rollguard` ServiceAccount lives and the built images are, and `<ns>`,
the target. rollguard then runs with that ServiceAccount's own token, through a proxy that records every
request: each one must be allowed, so a verb rollguard uses and rbac.yaml does not grant fails a test even
where rollguard copes with the refusal (the `list events` that names a quota refusing a deployer pod).

Least privilege, measured: for every verb of every rule, the Role is rewritten without it and the
command that needs it runs: rollguard must refuse (exit 2) in its read-only preflight, naming the
verb and the resource, with nothing changed on the cluster.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rollguard.cluster.client import Client
from rollguard.core.errors import ApiError, NotFound
from rollguard.core.resources import (
    DEPLOYMENT_CONFIGS,
    DEPLOYMENTS,
    IMAGE_STREAMS,
    JOBS,
    NAMESPACES,
    PODS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    Resource,
)
from sandbox import cluster
from tests.helpers.cluster import (
    DC,
    DEPLOYMENT,
    IMAGE,
    OLD,
    SELECTOR,
    dc_body,
    deployment_body,
    resource_versions,
    rolled_out,
    rollguard,
    view,
    wait_until,
)
from tests.helpers.proxy import FaultProxy
from tests.helpers.scenarios import image_stream
from tests.tekton.manifests import RBAC_FILE, Obj, subparsers

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
SECRETS = Resource("", "v1", "secrets", "Secret")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
KINDS = {"ServiceAccount": SERVICE_ACCOUNTS, "Role": ROLES, "RoleBinding": ROLE_BINDINGS}

# Tags of the CD namespace's ImageStream `api`: what --promote-from --tag copies into the target.
CD_TAGS = {"t2": f"{IMAGE}:v2", "t3": f"{IMAGE}:v3"}

# -- the manifests ---------------------------------------------------------------------------------


def rbac_docs(target: str, cd: str) -> list[Obj]:
    text = RBAC_FILE.read_text().replace("example-dev", target).replace("example-cd", cd)
    return [d for d in yaml.safe_load_all(text) if d]


def roles() -> dict[str, Obj]:
    return {d["metadata"]["name"]: d for d in rbac_docs("t", "c") if d["kind"] == "Role"}


@dataclass(frozen=True)
class Grant:
    """One verb of one rule of one Role of rbac.yaml."""

    role: str
    group: str
    resource: str
    verb: str

    @property
    def label(self) -> str:
        """How rollguard names the resource: ``deploymentconfigs.apps.openshift.io``, ``pods``."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    @property
    def id(self) -> str:
        return f"{self.role.removeprefix('rollguard-')}:{self.verb}-{self.label}"


def grants() -> list[Grant]:
    found = []
    for name, role in roles().items():
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    found += [Grant(name, group, resource, verb) for verb in rule["verbs"]]
    return found


def without(role: Obj, grant: Grant) -> list[Obj]:
    """The role's rules minus one verb (a rule left without verbs is dropped)."""
    rules = []
    for rule in role["rules"]:
        rule = json.loads(json.dumps(rule))
        if grant.group in rule["apiGroups"] and grant.resource in rule["resources"]:
            assert rule["apiGroups"] == [grant.group] and rule["resources"] == [grant.resource], (
                "one resource per rule keeps every grant measurable on its own"
            )
            rule["verbs"] = [v for v in rule["verbs"] if v != grant.verb]
        if rule["verbs"]:
            rules.append(rule)
    return rules


# -- static checks of the file ----------------------------------------------------------------------


def test_rbac_grants_no_secrets_no_wildcards_nothing_cluster_wide() -> None:
    docs = rbac_docs("t", "c")
    assert {d["kind"] for d in docs} == {"ServiceAccount", "Role", "RoleBinding"}
    for d in docs:
        assert d["metadata"].get("namespace"), f"{d['kind']} {d['metadata']['name']} must name its namespace"
    for g in grants():
        assert "*" not in (g.group, g.resource, g.verb)
        assert g.resource not in ("secrets", "serviceaccounts", "roles", "rolebindings", "pods/exec")
        assert g.verb not in ("escalate", "bind", "impersonate", "deletecollection")
    for d in docs:
        if d["kind"] == "RoleBinding":
            assert d["roleRef"]["kind"] == "Role"
            assert d["subjects"] == [{"kind": "ServiceAccount", "name": "rollguard", "namespace": "c"}]


def test_rollout_role_is_exactly_what_the_preflight_checks() -> None:
    """rollguard-rollout + rollguard-promote-source == task.preflight.rollout_permissions for a group of
    both kinds that promotes: nothing the tool does not ask for, nothing it asks for missing. (The
    sandbox does not emulate OpenShift's own check of `get imagestreams/layers` on a cross-namespace
    tag; the preflight asks for it, so the matrix below measures it all the same.)"""
    from rollguard.plan.rollout_read import rollout_permissions

    needs = rollout_permissions("t", {DC, DEPLOYMENT}, promote_from="c")
    wanted = {(ns, res.group, res.plural, verb) for verb, res, ns in needs}
    granted = {
        ("t" if g.role == "rollguard-rollout" else "c", g.group, g.resource, g.verb)
        for g in grants()
        if g.role in ("rollguard-rollout", "rollguard-promote-source")
    }
    assert granted == wanted


def test_verify_role_is_exactly_what_a_job_check_asks_beyond_the_rollout_role() -> None:
    """rollguard-verify == task.plan.checks_read.check_needs for a job check, less what the rollout Role
    grants already (listing pods); an http or prometheus check asks nothing of the API server."""
    from rollguard.plan.checks import parse_checks
    from rollguard.plan.checks_read import check_needs

    job = "apiVersion: batch/v1\nkind: Job\nspec: {template: {spec: {containers: []}}}\n"
    checks = parse_checks("checks: [{name: smoke, job: j.yaml}]", source="c.yaml", read=lambda _: job)
    wanted = {(res.group, res.plural, verb) for verb, res, _ns in check_needs("t", checks)}
    rollout = {(g.group, g.resource, g.verb) for g in grants() if g.role == "rollguard-rollout"}
    verify = {(g.group, g.resource, g.verb) for g in grants() if g.role == "rollguard-verify"}
    assert verify == wanted - rollout and not verify & rollout
    http = parse_checks("checks: [{name: h, http: {url: 'http://x/'}}]", source="c.yaml", read=lambda _: "")
    assert check_needs("t", http) == []


# -- the sandbox set-up: namespaces, rbac.yaml, the ServiceAccount's token, one group -----------------


@dataclass
class Setup:
    admin: Client
    target: str
    cd: str
    kubeconfig: Path  # the rollguard ServiceAccount's


def sa_token(admin: Client, namespace: str, name: str, timeout: float = 60.0) -> str:
    """The ServiceAccount's token, once the token controller has made its Secret."""
    sa = wait_until(admin, SERVICE_ACCOUNTS, namespace, name, lambda o: bool(o.get("secrets")),
                    timeout=timeout, what="to get a token Secret")  # fmt: skip
    secret = admin.get(SECRETS, sa["secrets"][0]["name"], namespace=namespace)
    return base64.b64decode(secret["data"]["token"]).decode()


@contextlib.contextmanager
def rbac_namespaces(sandbox: cluster.Sandbox, where: Path, *, group: bool = True) -> Iterator[Setup]:
    """Two fresh namespaces with rbac.yaml applied as written, and the ServiceAccount's kubeconfig;
    with ``group``, the group every test here rolls out: a DC fed by the image trigger of ImageStream
    api:latest, and a plain Deployment. Deleted afterwards."""
    admin = Client.connect(kubeconfig=str(sandbox.kubeconfig))
    target = f"rbac-{secrets.token_hex(3)}"
    cd = f"{target}-cd"
    for ns in (target, cd):
        admin.create(NAMESPACES, {"metadata": {"name": ns}})
    try:
        for doc in rbac_docs(target, cd):
            admin.create(KINDS[doc["kind"]], doc, namespace=doc["metadata"]["namespace"])
        token = sa_token(admin, cd, "rollguard")
        sa_token(admin, target, "default")  # pods are refused until the namespace's default SA has one
        kubeconfig = cluster.write_kubeconfig(where / "kubeconfig", sandbox, token, "rollguard", target)
        if group:
            image_stream(admin, target, "api", {"latest": OLD})
            image_stream(admin, cd, "api", CD_TAGS)
            trigger = [{"type": "ConfigChange"}, {"type": "ImageChange", "imageChangeParams": {
                "automatic": True, "containerNames": ["app"], "from": {"kind": "ImageStreamTag", "name": "api:latest"}}}]  # fmt: skip
            admin.create(DEPLOYMENT_CONFIGS, dc_body("api", " ", triggers=trigger), namespace=target)
            admin.create(DEPLOYMENTS, deployment_body("web", OLD), namespace=target)
            wait_until(admin, DEPLOYMENT_CONFIGS, target, "api",
                       lambda o: "@sha256:" in o["spec"]["template"]["spec"]["containers"][0]["image"],
                       what="image trigger to fill the image")  # fmt: skip
            rolled_out(admin, DC, target, "api")
            rolled_out(admin, DEPLOYMENT, target, "web")
        yield Setup(admin=admin, target=target, cd=cd, kubeconfig=kubeconfig)
    finally:
        for ns in (target, cd):
            with contextlib.suppress(NotFound):
                admin.delete(NAMESPACES, ns)


@pytest.fixture(scope="module")
def setup(sandbox: cluster.Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with rbac_namespaces(sandbox, tmp_path_factory.mktemp("rbac")) as made:
        yield made


@pytest.fixture(scope="module")
def proxy(sandbox: cluster.Sandbox) -> Iterator[FaultProxy]:
    """A proxy that injects nothing: it records every request the ServiceAccount makes and its answer."""
    with FaultProxy(sandbox.server, sandbox.ca, max_seconds=3600) as recording:
        yield recording


@pytest.fixture
def recorded(setup: Setup, proxy: FaultProxy) -> Iterator[Path]:
    """The ServiceAccount's kubeconfig through the recording proxy; after the test, every request it made
    must have been allowed: a verb rollguard uses that rbac.yaml does not grant fails the test, even
    where rollguard copes with the refusal (a 403 it tolerates still costs the report its evidence)."""
    proxy.reset()
    yield proxy.kubeconfig(setup.kubeconfig, setup.kubeconfig.parent / "recorded-kubeconfig")
    assert not refused(proxy), refused(proxy)


# Refusals rollguard asks for knowingly: whether the namespace exists (`get namespaces/NAME`) is
# cluster-scoped, which rbac.yaml grants nothing of; a 403 there reads as "it exists" and the namespaced
# reads that follow tell (task/state/inventory.py namespace_exists).
EXPECTED_REFUSALS = frozenset({("get", "namespaces")})


def refused(proxy: FaultProxy) -> list[str]:
    """The requests the API server refused for want of a permission (403), as ``VERB RESOURCE PATH``,
    but for the probes in EXPECTED_REFUSALS."""
    return [
        f"{r.verb} {r.resource} {r.path}"
        for r in proxy.records
        if r.status == 403 and (r.verb, r.resource) not in EXPECTED_REFUSALS
    ]


def everything(s: Setup) -> dict[str, str]:
    """resourceVersions of every object rollguard could touch, in both namespaces."""
    found = resource_versions(s.admin, s.target)
    for ns in (s.target, s.cd):
        for obj in s.admin.list(IMAGE_STREAMS, namespace=ns)["items"]:
            found[f"{ns}/imagestreams/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return found


def state(s: Setup) -> dict[str, Any]:
    return {name: view(s.admin, s.target, kind, name) for kind, name in ((DC, "api"), (DEPLOYMENT, "web"))}


def rollout_args(s: Setup, tag: str, web: str) -> list[str]:
    """The Task's command line shape: a promoted DC and a Deployment given its image."""
    return ["rollout", "--namespace", s.target, "--selector", SELECTOR, "--promote-from", s.cd, "--tag", tag,
            "--image", f"deployment/web={web}", "--timeout", "2m"]  # fmt: skip


# -- the ServiceAccount can do the whole job --------------------------------------------------------


def test_rollout_as_the_service_account(setup: Setup, recorded: Path, tmp_path: Path) -> None:
    result = rollguard(recorded, *rollout_args(setup, "t2", f"{IMAGE}:v2"), report=tmp_path / "r.json")
    assert result.code == 0, result.stdout + result.stderr
    after = state(setup)
    assert after["web"].images == {"app": f"{IMAGE}:v2"} and after["web"].complete
    assert after["api"].complete and "@sha256:" in after["api"].images["app"]
    dc = setup.admin.get(DEPLOYMENT_CONFIGS, "api", namespace=setup.target)
    assert dc["spec"]["triggers"][1]["imageChangeParams"]["from"]["name"] == "api:t2"
    assert result.report["status"] == "succeeded"


def test_failing_rollout_and_its_revert_as_the_service_account(
    setup: Setup, recorded: Path, tmp_path: Path
) -> None:
    before = state(setup)
    result = rollguard(recorded, *rollout_args(setup, "t3", f"{IMAGE}:v3-crash"), report=tmp_path / "r.json")
    assert result.code == 1, result.stdout + result.stderr
    assert result.report["status"] == "reverted"
    assert "deployment/web" in result.report["error"]
    after = state(setup)
    for name in ("api", "web"):
        assert after[name].images == before[name].images and after[name].complete and not after[name].paused


def job_checks(where: Path) -> Path:
    """A checks file with one job check (a test image that passes) for ``--verify``."""
    (where / "smoke-job.yaml").write_text(yaml.safe_dump({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "smoke"},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "smoke", "image": "registry.local/shop/smoke:v1-exit0"}]}}},
    }))  # fmt: skip
    path = where / "checks.yaml"
    path.write_text("checks:\n  - {name: smoke, timeout: 2m, job: smoke-job.yaml}\n")
    return path


def test_rollout_verified_by_a_job_check_as_the_service_account(
    setup: Setup, recorded: Path, tmp_path: Path
) -> None:
    """The Job is created, watched, its pod's log read and the Job deleted with the ServiceAccount's rights."""
    result = rollguard(recorded, *rollout_args(setup, "t2", f"{IMAGE}:v2"), "--verify",
                       str(job_checks(tmp_path)), report=tmp_path / "r.json")  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    [check] = result.report["checks"]
    assert check["outcome"] == "passed" and "PASS: 12 of 12 tests passed" in check["evidence"], check
    assert "could not delete" not in check["evidence"]
    assert setup.admin.list(JOBS, namespace=setup.target)["items"] == []


REPAIRS = [c for c in ("resume", "revert", "redeploy") if c in subparsers()]


@pytest.mark.skipif(not REPAIRS, reason="the repair commands are not there yet")
def test_repair_as_the_service_account(setup: Setup, recorded: Path, tmp_path: Path) -> None:
    """A DC left paused by an old pause/resume stage, resumed with the ServiceAccount's rights only."""
    setup.admin.patch(DEPLOYMENT_CONFIGS, "api", {"spec": {"paused": True}}, namespace=setup.target)
    try:
        result = rollguard(recorded, "resume", "--namespace", setup.target, "dc/api",
                           "--timeout", "2m", report=tmp_path / "r.json")  # fmt: skip
        assert result.code == 0, result.stdout + result.stderr
        assert not view(setup.admin, setup.target, DC, "api").paused
        assert "could not record an Event" not in json.dumps(result.report)
    finally:
        setup.admin.patch(DEPLOYMENT_CONFIGS, "api", {"spec": {"paused": False}}, namespace=setup.target)


@pytest.mark.skipif(not REPAIRS, reason="the repair commands are not there yet")
def test_group_repairs_as_the_service_account(setup: Setup, recorded: Path, tmp_path: Path) -> None:
    """`revert -l` (the group back on its journal's verified state) and `redeploy` with the
    ServiceAccount's rights only (the rollout and repair Roles), every request allowed."""
    reverted = rollguard(recorded, "revert", "--namespace", setup.target, "--selector", SELECTOR,
                         "--timeout", "2m", report=tmp_path / "revert.json")  # fmt: skip
    assert reverted.code == 0, reverted.stdout + reverted.stderr
    redeployed = rollguard(recorded, "redeploy", "--namespace", setup.target, "deployment/web",
                           "--timeout", "2m", report=tmp_path / "redeploy.json")  # fmt: skip
    assert redeployed.code == 0, redeployed.stdout + redeployed.stderr
    assert view(setup.admin, setup.target, DEPLOYMENT, "web").complete


def test_a_refused_deployer_pod_is_named_as_the_service_account(
    sandbox: cluster.Sandbox, proxy: FaultProxy, tmp_path: Path
) -> None:
    """With the Task's own rights the first error quotes the quota that refuses a DC's deployer pod: only
    the DC's FailedCreate Event records it (openshift-controller-manager pkg/apps/deployer/
    deployer_controller.go), so reading it needs `list events`. Before, rbac.yaml granted `create` only:
    the Event read was refused (403) and the error said where to look instead. In namespaces of its own:
    the exhausted quota would refuse the other tests' pods."""
    with rbac_namespaces(sandbox, tmp_path, group=False) as own:
        own.admin.create(DEPLOYMENT_CONFIGS, dc_body("api", OLD), namespace=own.target)
        rolled_out(own.admin, DC, own.target, "api")
        wait_until(
            own.admin, PODS, own.target, "api-1-deploy", lambda p: p["status"].get("phase") == "Succeeded"
        )
        own.admin.delete(PODS, "api-1-deploy", namespace=own.target)  # kept after a rollout; not this test's
        quota = {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}}  # the one pod api-1 runs
        own.admin.create(QUOTAS, quota, namespace=own.target)
        wait_until(own.admin, QUOTAS, own.target, "pods",
                   lambda q: (q.get("status") or {}).get("used", {}).get("pods") == "1", what="to be counted")  # fmt: skip
        proxy.reset()
        kubeconfig = proxy.kubeconfig(own.kubeconfig, tmp_path / "recorded-kubeconfig")
        result = rollguard(kubeconfig, "rollout", "--namespace", own.target, "--selector", SELECTOR,
                           "--image", f"dc/api={IMAGE}:v2", "--timeout", "150s", report=tmp_path / "r.json")  # fmt: skip
        assert result.code == 3, result.stdout + result.stderr  # the revert needs a deployer pod too
        error = result.report["error"]
        assert error.startswith('dc/api: deployer pod "api-2-deploy" cannot be created'), error
        assert "Error creating deployer pod: " in error and "exceeded quota: pods" in error, error
        assert not refused(proxy), refused(proxy)


# -- least privilege: each grant taken away in turn ---------------------------------------------------

MEASURED = grants()


def allowed(client: Client, grant: Grant, namespace: str) -> bool:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": namespace, "verb": grant.verb, "group": grant.group,
                                        "resource": grant.resource}},
    }  # fmt: skip
    return bool(client.create(SELF_SUBJECT_ACCESS_REVIEWS, review).get("status", {}).get("allowed"))


def set_rules(s: Setup, sa: Client, role: str, rules: list[Obj], expect: dict[Grant, bool]) -> None:
    """Rewrite a Role, then wait until the API server's authorizer answers as ``expect`` says."""
    ns = s.cd if role == "rollguard-promote-source" else s.target
    for _ in range(5):
        current = s.admin.get(ROLES, role, namespace=ns)
        current["rules"] = rules
        try:
            s.admin.replace(ROLES, current, namespace=ns)
            break
        except ApiError:
            continue
    deadline = time.monotonic() + 15
    while any(
        allowed(sa, g, s.cd if g.role == "rollguard-promote-source" else s.target) != v
        for g, v in expect.items()
    ):
        assert time.monotonic() < deadline, f"RBAC did not settle on {expect}"
        time.sleep(0.05)  # the authorizer's informer catches up within milliseconds; nothing to watch


def run_in_process(*argv: str) -> tuple[int, str]:
    """The CLI's main() in this process: a refused run never gets past its read-only preflight."""
    from rollguard.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def new_workloads(where: Path) -> Path:
    """Manifests of a DC and a Deployment the target does not hold yet (``rollout -f`` creates them)."""
    path = where / "new-workloads.yaml"
    path.write_text(
        yaml.safe_dump_all([dc_body("api-new", f"{IMAGE}:v2"), deployment_body("web-new", f"{IMAGE}:v2")])
    )
    return path


@pytest.fixture(scope="module")
def sa_client(setup: Setup) -> Client:
    return Client.connect(kubeconfig=str(setup.kubeconfig))


@pytest.fixture(scope="module")
def full_roles(setup: Setup, sa_client: Client) -> Iterator[dict[str, Obj]]:
    """Puts every Role back as rbac.yaml has it once the matrix is done."""
    original = {d["metadata"]["name"]: d for d in rbac_docs(setup.target, setup.cd) if d["kind"] == "Role"}
    yield original
    for name, role in original.items():
        set_rules(setup, sa_client, name, role["rules"], {})


@pytest.mark.parametrize("grant", MEASURED, ids=[g.id for g in MEASURED])
def test_without_this_grant_the_preflight_refuses_and_changes_nothing(
    setup: Setup, sa_client: Client, full_roles: dict[str, Obj], grant: Grant
) -> None:
    namespace = setup.cd if grant.role == "rollguard-promote-source" else setup.target
    role = full_roles[grant.role]
    set_rules(setup, sa_client, grant.role, without(role, grant), {grant: False})
    try:
        before = everything(setup)
        kubeconfig = str(setup.kubeconfig)
        if grant.role == "rollguard-repair":
            code, err = run_in_process("resume", "--namespace", setup.target, "--selector", SELECTOR,
                                       "--kubeconfig", kubeconfig)  # fmt: skip
            assert code == 2, err
            assert f"'{grant.verb}'" in err and grant.label in err, err
        else:
            args = rollout_args(setup, "t2", f"{IMAGE}:v2")
            if grant.role == "rollguard-apply":  # -f with a workload of each kind to create
                args += ["-f", str(new_workloads(setup.kubeconfig.parent))]
            if grant.role == "rollguard-verify":  # --verify with a job check
                args += ["--verify", str(job_checks(setup.kubeconfig.parent))]
            code, err = run_in_process(*args, "--kubeconfig", kubeconfig)
            assert code == 2, err
            assert f"not allowed to {grant.verb} {grant.label} in namespace '{namespace}'" in err, err
        assert "Traceback" not in err
        assert everything(setup) == before
    finally:  # every other case runs with only its own grant missing
        set_rules(setup, sa_client, grant.role, role["rules"], {grant: True})
