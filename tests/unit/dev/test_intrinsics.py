"""The intrinsic resolver the deploy rehearsal reads the transformed template with."""

from __future__ import annotations

import pytest

from edgeproxy_dev.intrinsics import Stack, Unresolvable

CONDITIONS = {
    "UseIam": {"Fn::Equals": [{"Ref": "AuthMode"}, "iam"]},
    "HasModels": {"Fn::Not": [{"Fn::Equals": [{"Fn::Join": ["", {"Ref": "Models"}]}, ""]}]},
    "Both": {"Fn::And": [{"Condition": "UseIam"}, {"Condition": "HasModels"}]},
}


def stack(auth: str = "keys", models: list[str] | None = None) -> Stack:
    refs = {"AuthMode": auth, "Models": models or [], "AWS::Region": "us-east-1", "Table": "t"}
    return Stack(refs, {"Table.Arn": "arn:aws:dynamodb:us-east-1:1:table/t"}, CONDITIONS)


def test_refs_attributes_and_subs_resolve_to_the_stacks_values() -> None:
    value = {
        "Resource": {"Fn::GetAtt": ["Table", "Arn"]},
        "Name": {"Ref": "Table"},
        "Parameter": {"Fn::Sub": "arn:aws:ssm:${AWS::Region}:parameter/${Table}/*"},
        "Index": {"Fn::Sub": "${Table.Arn}/index/${Name}", "Ignored": 1},
        "Local": {"Fn::Sub": ["${Base}/x", {"Base": {"Ref": "Table"}}]},
    }
    resolved = stack().resolve(value)
    assert resolved["Resource"] == "arn:aws:dynamodb:us-east-1:1:table/t"
    assert resolved["Name"] == "t"
    assert resolved["Parameter"] == "arn:aws:ssm:us-east-1:parameter/t/*"
    assert resolved["Local"] == "t/x"
    # A mapping with more than one key is data, not an intrinsic: resolved inside.
    assert resolved["Index"]["Fn::Sub"] == "${Table.Arn}/index/${Name}"


def test_if_follows_the_conditions_and_no_value_drops_the_entry() -> None:
    statements = [
        {"Sid": "Always"},
        {"Fn::If": ["HasModels", {"Sid": "Models"}, {"Ref": "AWS::NoValue"}]},
        {"Fn::If": ["Both", {"Sid": "Both"}, {"Ref": "AWS::NoValue"}]},
    ]
    assert stack().resolve(statements) == [{"Sid": "Always"}]
    assert stack(models=["arn:m"]).resolve(statements) == [{"Sid": "Always"}, {"Sid": "Models"}]
    everything = stack("iam", ["arn:m"]).resolve(statements)
    assert [s["Sid"] for s in everything] == ["Always", "Models", "Both"]
    auth = {"Auth": {"Fn::If": ["UseIam", {"Default": "AWS_IAM"}, {"Ref": "AWS::NoValue"}]}}
    assert stack().resolve(auth) == {}
    assert stack("iam").resolve(auth) == {"Auth": {"Default": "AWS_IAM"}}


@pytest.mark.parametrize(
    "value",
    [
        {"Ref": "Unknown"},
        {"Fn::GetAtt": ["Table", "StreamArn"]},
        {"Fn::Select": [0, ["a"]]},
        {"Fn::If": ["NoSuchCondition", "a", "b"]},
        {"Fn::Sub": "${Nowhere}"},
    ],
)
def test_what_it_does_not_know_is_an_error_not_a_pass_through(value: object) -> None:
    with pytest.raises(Unresolvable):
        stack().resolve(value)
