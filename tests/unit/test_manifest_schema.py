"""`rollguard.plan.schema`: a manifest's fields against the published OpenAPI v2 schema, as kubectl
checked them before fieldValidation=Strict (the definitions below have the shapes a 1.20 API server
publishes: built-in types with properties and $refs, a custom resource's spec left open)."""

from rollguard.kinds import KINDS
from rollguard.plan.schema import unknown_fields

GVK = "x-kubernetes-group-version-kind"
DEFINITIONS = {
    "io.k8s.api.apps.v1.Deployment": {
        GVK: [{"group": "apps", "version": "v1", "kind": "Deployment"}],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/meta.ObjectMeta"},
            "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"},
        },
    },
    "io.k8s.api.apps.v1.DeploymentSpec": {
        "properties": {"replicas": {"type": "integer"}, "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}}
    },
    "io.k8s.api.core.v1.PodTemplateSpec": {
        "properties": {"metadata": {"$ref": "#/definitions/meta.ObjectMeta"}, "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}}
    },
    "io.k8s.api.core.v1.PodSpec": {
        "properties": {"containers": {"type": "array", "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}}}
    },
    "io.k8s.api.core.v1.Container": {
        "properties": {"name": {}, "image": {}, "env": {"type": "array", "items": {"properties": {"name": {}, "value": {}}}},
                       "resources": {"properties": {"limits": {"additionalProperties": {"type": "string"}}}}},
    },
    "meta.ObjectMeta": {"properties": {"name": {}, "labels": {"additionalProperties": {"type": "string"}}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"properties": {"name": {}, "labels": {}}},
    "io.openshift.apps.v1.DeploymentConfig": {
        GVK: [{"group": "apps.openshift.io", "version": "v1", "kind": "DeploymentConfig"}],
        "properties": {"apiVersion": {}, "kind": {}, "metadata": {"$ref": "#/definitions/meta.ObjectMeta"},
                       "spec": {"x-kubernetes-preserve-unknown-fields": True}},
    },
}  # fmt: skip


def workload(kind: str, api_version: str, container: dict) -> dict:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "api", "labels": {"app": "shop"}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
    }


def test_a_misspelled_container_field_is_named_with_its_path_and_type() -> None:
    body = workload(
        "Deployment",
        "apps/v1",
        {"name": "app", "image": "i:1", "envv": [], "env": [{"name": "A", "valu": "1"}]},
    )
    assert unknown_fields(body, DEFINITIONS, parts=KINDS["Deployment"].schema_parts) == [
        '"spec.template.spec.containers[0].envv" (not a field of io.k8s.api.core.v1.Container)',
        '"spec.template.spec.containers[0].env[0].valu" (not a field of spec.template.spec.containers[0].env[0])',
    ]


def test_maps_and_known_fields_pass() -> None:
    body = workload(
        "Deployment", "apps/v1", {"name": "app", "image": "i:1", "resources": {"limits": {"cpu": "1"}}}
    )
    assert unknown_fields(body, DEFINITIONS, parts=KINDS["Deployment"].schema_parts) == []


def test_a_dc_template_is_checked_although_the_published_spec_is_open() -> None:
    body = workload("DeploymentConfig", "apps.openshift.io/v1", {"name": "app", "image": "i:1", "envv": []})
    body["spec"]["strategyy"] = {}  # the open spec itself is not judged: nothing the server would refuse
    assert unknown_fields(body, DEFINITIONS, parts=KINDS["DeploymentConfig"].schema_parts) == [
        '"spec.template.spec.containers[0].envv" (not a field of io.k8s.api.core.v1.Container)'
    ]


def test_a_type_the_schema_does_not_know_is_not_judged() -> None:
    assert (
        unknown_fields({"apiVersion": "x/v1", "kind": "Thing", "spec": {"a": 1}}, DEFINITIONS, parts={}) == []
    )
