"""The buffered proxy's published version and alias, as CloudFormation would deploy them.

The HTTP API must invoke the alias ``live`` (a published version: the only
thing SnapStart snapshots), and a deploy that changes the proxy's code, its
layer or any parameter it reads must publish a new version, or the alias
keeps serving the old one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest

from edgeproxy_dev.conditions import deployed
from edgeproxy_dev.template import default_template_path, load_template
from edgeproxy_dev.transform import ACCOUNT, parameter_combinations, parameter_values
from edgeproxy_dev.transform import transform_template as transform

Resources = dict[str, dict[str, Any]]
ALIAS = "ProxyFunctionAliaslive"
# The longest layer version ARN of any partition and region (SAM names the layer SharedLayer).
LONGEST_LAYER_ARN = f"arn:aws-iso-b:lambda:ap-southeast-77:{ACCOUNT}:layer:SharedLayer:99999999"
LONGEST_LAYER_VERSION = "99999999"


@pytest.fixture(scope="module")
def stacks() -> list[tuple[dict[str, str], Resources]]:
    """Each covered combination with what it deploys (SnapStart and XRayTracing pairwise)."""
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = load_template(default_template_path())
    return [
        (o, deployed(transform(o), parameter_values(template, o))) for o in parameter_combinations()
    ]


def _of_type(resources: Resources, kind: str) -> Resources:
    return {n: r for n, r in resources.items() if r["Type"] == kind}


def test_the_api_invokes_the_live_alias_of_one_version_with_snapstart_as_set(
    stacks: list[tuple[dict[str, str], Resources]],
) -> None:
    assert {o["SnapStart"] for o, _ in stacks} == {"off", "on"}
    for overrides, resources in stacks:
        ((version_id, version),) = _of_type(resources, "AWS::Lambda::Version").items()
        assert version["Properties"]["FunctionName"] == {"Ref": "ProxyFunction"}
        # Replaced, not kept: a kept SnapStart version keeps a billed snapshot.
        assert version["DeletionPolicy"] == "Delete"
        alias = resources[ALIAS]["Properties"]
        assert alias["Name"] == "live"
        assert alias["FunctionVersion"] == {"Fn::GetAtt": [version_id, "Version"]}
        applied = "PublishedVersions" if overrides["SnapStart"] == "on" else "None"
        proxy = resources["ProxyFunction"]["Properties"]
        assert proxy["SnapStart"] == {"ApplyOn": applied}, overrides
        # The streaming function keeps plain init (README: SnapStart).
        assert "SnapStart" not in resources["StreamFunction"]["Properties"]
        (operation,) = resources["HttpApi"]["Properties"]["Body"]["paths"]["/{proxy+}"].values()
        uri = operation["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
        assert "/functions/${" + ALIAS + "}/invocations" in uri
        (permission,) = [
            p["Properties"]
            for p in _of_type(resources, "AWS::Lambda::Permission").values()
            if p["Properties"]["Principal"] == "apigateway.amazonaws.com"
        ]
        assert permission["FunctionName"] == {"Ref": ALIAS}
        # Every version and alias logs to the function's one group.
        group = resources["ProxyLogs"]["Properties"]["LogGroupName"]
        assert group == {"Fn::Sub": "/aws/lambda/${ProxyFunction}"}


def _names(node: Any) -> Iterator[str]:
    """Every name a Ref, a GetAtt, a Sub's ${...} or an If's condition uses in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                yield value
            elif key == "Fn::GetAtt":
                yield value[0]
            elif key == "Fn::Sub":
                text = value if isinstance(value, str) else value[0]
                yield from (n.split(".")[0] for n in re.findall(r"\$\{([^}!]+)\}", text))
            elif key == "Fn::If":
                yield value[0]
            yield from _names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _names(item)


def _parameters_read(template: dict[str, Any], node: Any) -> set[str]:
    """The parameters ``node`` reads, through the conditions it names too."""
    found: set[str] = set()
    pending = list(_names(node))
    while pending:
        name = pending.pop()
        if name in template["Parameters"]:
            found.add(name)
        elif name in template["Conditions"]:
            pending.extend(_names(template["Conditions"][name]))
    return found


def test_every_parameter_the_proxy_reads_is_in_its_version_description() -> None:
    template = load_template(default_template_path())
    proxy = template["Resources"]["ProxyFunction"]["Properties"]
    described = set(_names(proxy["VersionDescription"]))
    read = _parameters_read(template, [template["Globals"]["Function"], proxy])
    assert {"SnapStart", "LogLevel", "XRayTracing", "AdminKeyParameter"} <= read
    # A parameter missing here would change $LATEST and leave the alias on the old version.
    assert read <= described
    # The layer carries the package's code: its new version must publish one too.
    assert "SharedLayer" in described


def _longest(spec: dict[str, Any]) -> str:
    if "AllowedValues" in spec:
        return max((str(v) for v in spec["AllowedValues"]), key=len)
    if "MaxValue" in spec:
        return str(spec["MaxValue"])
    return "x" * int(spec["MaxLength"])  # a KeyError: give the parameter a MaxLength


def test_the_version_description_fits_lambdas_256_characters_at_its_longest() -> None:
    template = load_template(default_template_path())
    sub = template["Resources"]["ProxyFunction"]["Properties"]["VersionDescription"]["Fn::Sub"]
    text, variables = (sub, {}) if isinstance(sub, str) else sub
    # The layer as its version number (the last part of its version ARN), or its whole ARN.
    assert variables in (
        {},
        {"Layer": {"Fn::Select": [7, {"Fn::Split": [":", {"Ref": "SharedLayer"}]}]}},
    )
    assert LONGEST_LAYER_ARN.split(":")[7] == LONGEST_LAYER_VERSION
    parameters = template["Parameters"]
    layer = {"SharedLayer": LONGEST_LAYER_ARN, "Layer": LONGEST_LAYER_VERSION}
    longest = re.sub(
        r"\$\{([^}]+)\}",
        lambda m: layer[m[1]] if m[1] in layer else _longest(parameters[m[1]]),
        text,
    )
    assert len(longest) <= 256, longest
