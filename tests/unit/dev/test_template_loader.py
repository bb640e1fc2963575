"""The template loader's short-form tags, as CloudFormation's long form spells them."""

from __future__ import annotations

from pathlib import Path

from edgeproxy_dev.template import load_template


def test_short_forms_become_the_long_forms(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "Conditions:\n"
        "  A: !Equals [!Ref P, 'on']\n"
        "  B: !Or [!Condition A, !Not [!Condition A]]\n"
        "Outputs:\n"
        "  X: {Value: !GetAtt T.Arn}\n"
    )
    template = load_template(path)
    assert template["Conditions"] == {
        "A": {"Fn::Equals": [{"Ref": "P"}, "on"]},
        # {"Condition": name}, never "Fn::Condition" (CloudFormation rejects that).
        "B": {"Fn::Or": [{"Condition": "A"}, {"Fn::Not": [{"Condition": "A"}]}]},
    }
    assert template["Outputs"]["X"]["Value"] == {"Fn::GetAtt": ["T", "Arn"]}
