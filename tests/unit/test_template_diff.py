"""The diff view's pure part: the whole template compared, controller-written keys ignored."""

from rollguard.tui.diff import clean, template_diff


def template(image: str, *, env: str = "a", hash_label: str = "x") -> dict:
    return {
        "metadata": {"labels": {"app": "web", "pod-template-hash": hash_label}},
        "spec": {"containers": [{"name": "web", "image": image, "env": [{"name": "MODE", "value": env}]}]},
    }


def test_same_templates_differ_only_in_controller_labels_give_no_diff() -> None:
    diff = template_diff(before=template("i:1", hash_label="a"), after=template("i:1", hash_label="b"),
                         left="verified", right="live")  # fmt: skip
    assert diff.same


def test_a_change_outside_the_images_is_shown_with_styles() -> None:
    diff = template_diff(
        before=template("i:1"), after=template("i:1", env="b"), left="verified", right="live"
    )
    texts = [(line.style, line.text) for line in diff.lines]
    assert ("header", "--- verified") in texts and ("header", "+++ live") in texts
    assert ("remove", "-      value: a") in texts and ("add", "+      value: b") in texts
    assert any(style == "hunk" for style, _ in texts)
    assert not any("pod-template-hash" in text for _, text in texts)


def test_clean_drops_empty_metadata_and_keeps_the_input() -> None:
    original = {"metadata": {"labels": {"deployment": "web-2"}}, "spec": {}}
    assert clean(original) == {"spec": {}}
    assert original["metadata"]["labels"] == {"deployment": "web-2"}


def test_nothing_to_compare_with_is_not_the_same() -> None:
    diff = template_diff(before=None, after=template("i:1"), left="no verified template", right="live")
    assert diff.missing and not diff.same and not diff.lines


def test_a_template_encoded_by_an_older_controller_gives_no_diff() -> None:
    """The diff view judges "the same" where rollguard's one comparison does (kinds/templates.py
    same_template): a `creationTimestamp: null`, null members and defaulted fields are no change."""
    older = template("i:1")
    older["metadata"]["creationTimestamp"] = None
    older["spec"]["volumes"] = None
    older["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log"
    diff = template_diff(before=older, after=template("i:1"), left="revision 2", right="live")
    assert diff.same
