"""Manifests checked against the server's schema, as strict as ``kubectl apply`` (pure, no I/O).

``kubectl apply`` refuses a field its type does not have (``unknown field "envv"``); the API server
itself would drop it without a word (a typed decode ignores unknown JSON keys), so a misspelled ``envv:``
would pass the preflight's dry run and never be applied. The cluster's kube-apiserver may be too old for
``fieldValidation=Strict`` (added in Kubernetes 1.25; the sandbox's Debian build is 1.20), so the check
is the one kubectl made before that: every field of a manifest is looked up in the OpenAPI v2 document
the API server publishes (``/openapi/v2``), the type found by its ``x-kubernetes-group-version-kind``.

Where the published schema leaves a part open (no properties: a custom resource's
``x-kubernetes-preserve-unknown-fields``, an object's ``metadata``), the kind says which API type that
part is (`rollguard.kinds.base.Kind.schema_parts`: a DeploymentConfig's ``spec.template`` is a
``core/v1`` PodTemplateSpec, as openshift/api apps/v1 types.go declares it), so a pod template is
checked as strictly for a DC as for a Deployment. A part the schema leaves open and no kind names
stays unchecked: nothing is refused that the server's own types would take.
"""

from __future__ import annotations

from typing import Any

from rollguard.core.structs import Obj

Definitions = dict[str, Obj]


def definition_of(definitions: Definitions, *, api_version: str, kind: str) -> str | None:
    """The name of the definition whose ``x-kubernetes-group-version-kind`` is the object's type."""
    group, _, version = api_version.rpartition("/")
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if gvk.get("group", "") == group and gvk.get("version") == version and gvk.get("kind") == kind:
                return name
    return None


def unknown_fields(obj: Obj, definitions: Definitions, *, parts: dict[str, str]) -> list[str]:
    """Every field of ``obj`` its type (by the published schema) does not have, each as its quoted path
    (``"spec.template.spec.containers[0].envv"``) and the type that lacks it; [] when the schema
    does not know the object's type at all."""
    name = definition_of(
        definitions, api_version=str(obj.get("apiVersion", "")), kind=str(obj.get("kind", ""))
    )
    if name is None:
        return []
    out: list[str] = []
    _walk(obj, {"$ref": f"#/definitions/{name}"}, "", definitions, parts, out)
    return out


def _resolve(schema: Obj, definitions: Definitions) -> tuple[Obj, str]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/definitions/"):
        name = ref.removeprefix("#/definitions/")
        return definitions.get(name, {}), name
    for combined in schema.get("allOf") or []:  # a $ref wrapped for a description
        if isinstance(combined, dict) and "$ref" in combined:
            return _resolve(combined, definitions)
    return schema, ""


def _open(schema: Obj) -> bool:
    return not schema.get("properties") and "additionalProperties" not in schema


def _walk(
    value: Any, schema: Obj, path: str, definitions: Definitions, parts: dict[str, str], out: list[str]
) -> None:
    schema, type_name = _resolve(schema, definitions)
    if isinstance(value, dict):
        if _open(schema) and path in parts:
            schema, type_name = _resolve({"$ref": f"#/definitions/{parts[path]}"}, definitions)
        props = schema.get("properties")
        if props:
            for key, item in value.items():
                where = f"{path}.{key}" if path else key
                if key not in props:
                    out.append(f'"{where}" (not a field of {type_name or path or "the object"})')
                else:
                    _walk(item, props[key], where, definitions, parts, out)
        elif isinstance(schema.get("additionalProperties"), dict):
            for key, item in value.items():
                _walk(item, schema["additionalProperties"], f"{path}.{key}", definitions, parts, out)
        elif any(p.startswith(f"{path}.") for p in parts):  # open here, typed below (a DC's spec.template)
            for key, item in value.items():
                _walk(item, {}, f"{path}.{key}", definitions, parts, out)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(item, schema["items"], f"{path}[{index}]", definitions, parts, out)
