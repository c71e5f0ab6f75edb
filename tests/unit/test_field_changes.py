"""`field_changes`: every field a revert changes, one line each (issue 31: not only images)."""

from rollguard.kinds.templates import field_changes


def workload(
    *, image: str, env: list | None = None, label: str | None = None, cpu: str | None = None
) -> dict:
    container: dict = {"name": "app", "image": image}
    if env is not None:
        container["env"] = env
    if cpu is not None:
        container["resources"] = {"limits": {"cpu": cpu}}
    labels = {"app": "shop", **({"release": label} if label else {})}
    return {
        "metadata": {"labels": labels, "resourceVersion": "7"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [container]}}},
        "status": {"latestVersion": 3},
    }


def test_env_resources_labels_and_images_each_get_a_line() -> None:
    live = workload(image="i:2", env=[{"name": "MODE", "value": "new"}, {"name": "X", "value": "1"}],
                    label="r2", cpu="200m")  # fmt: skip
    back = workload(image="i:1", env=[{"name": "MODE", "value": "old"}, {"name": "X", "value": "1"}])
    assert field_changes(live, back) == [
        "metadata.labels.release: r2 -> (none)",
        "spec.template.spec.containers[app].env[MODE].value: new -> old",
        "spec.template.spec.containers[app].image: i:2 -> i:1",
        'spec.template.spec.containers[app].resources: {"limits":{"cpu":"200m"}} -> (none)',
    ]


def test_status_metadata_and_unpaused_are_not_changes() -> None:
    a, b = workload(image="i:1"), workload(image="i:1")
    b["metadata"]["resourceVersion"], b["status"] = "8", {}
    b["spec"]["paused"] = False
    assert field_changes(a, b) == []


def test_a_long_value_is_shortened() -> None:
    lines = field_changes(workload(image="i:" + "x" * 300), workload(image="i:1"), width=60)
    assert len(lines) == 1 and len(lines[0]) == 60 and lines[0].endswith("...")
