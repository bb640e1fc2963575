"""Run CloudFormation's SAM transform on ``template.yaml`` offline (aws-sam-translator).

``sam validate --lint`` only lints: the transform that CloudFormation runs
during ``sam deploy`` is a separate program, published as the
``aws-sam-translator`` package. This module runs it the way ``sam deploy``
would after ``sam package``: local code locations replaced by S3 URIs,
parameters resolved, pseudo parameters of one region and account.

    >>> resources = transform_template({"AuthMode": "keys"})["Resources"]
    >>> "StreamFunctionUrl" in resources
    True

``python -m edgeproxy_dev.transform`` transforms every parameter combination
the tests cover and exits 1 with the translator's message when one fails
(``make validate`` runs it).
"""

from __future__ import annotations

import copy
import functools
import itertools
import logging
import operator
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from edgeproxy_dev.template import default_template_path, load_template

REGION = "us-east-1"
ACCOUNT = "123456789012"
PSEUDO_PARAMETERS = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::StackName": "edgeproxy",
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/edgeproxy/1",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NotificationARNs": [],
}
# The parameters that switch resources or properties on and off, each with its
# values (the default first). The first four (FREE) run in every combination; each
# parameter of PAIRED takes the value its named parameters' positions give when
# XORed. The ten columns are distinct non-zero vectors over the four free ones, so
# the same sixteen transforms hold every pair of values of any two of the ten
# parameters (an orthogonal array, 2^(10-6)) instead of 1024; the first one is
# every default.
COMBINATIONS: dict[str, list[str]] = {
    "AuthMode": ["keys", "iam"],
    "BedrockModelArns": [
        "",
        f"arn:aws:bedrock:{REGION}::foundation-model/amazon.nova-pro-v1:0",
    ],
    "AlarmTopicArn": ["", f"arn:aws:sns:{REGION}:{ACCOUNT}:edgeproxy-alarms"],
    "AlertTopicArn": ["", f"arn:aws:sns:{REGION}:{ACCOUNT}:edgeproxy-budget-alerts"],
    "TableDeletionProtection": ["off", "on"],
    "SnapStart": ["off", "on"],
    "XRayTracing": ["off", "on"],
    "StreamReservedConcurrency": ["0", "100"],
    "HealthJobReservedConcurrency": ["0", "1"],
    "TableMaxReadRequestUnits": ["0", "4000"],
    "TableMaxWriteRequestUnits": ["0", "1000"],
}
PAIRED: dict[str, tuple[str, ...]] = {
    "AlertTopicArn": ("AuthMode", "AlarmTopicArn"),
    "SnapStart": ("AuthMode", "BedrockModelArns"),
    "XRayTracing": ("BedrockModelArns", "AlarmTopicArn"),
    "StreamReservedConcurrency": ("AuthMode", "AlarmTopicArn"),
    "HealthJobReservedConcurrency": ("AuthMode", "TableDeletionProtection"),
    "TableMaxReadRequestUnits": ("BedrockModelArns", "TableDeletionProtection"),
    "TableMaxWriteRequestUnits": (
        "AuthMode",
        "BedrockModelArns",
        "AlarmTopicArn",
        "TableDeletionProtection",
    ),
}
_CODE_PROPERTIES = {
    "AWS::Serverless::Function": "CodeUri",
    "AWS::Serverless::LayerVersion": "ContentUri",
}


class _NoManagedPolicies:
    """The translator asks IAM for managed policy ARNs by name; the template names none."""

    def load(self) -> dict[str, str]:
        return {}


def parameter_combinations() -> Iterator[dict[str, str]]:
    """Every combination of the free parameters of :data:`COMBINATIONS`, with the
    :data:`PAIRED` ones derived, as parameter overrides.

    >>> [(o["AuthMode"], o["SnapStart"]) for o in parameter_combinations()][::4]
    [('keys', 'off'), ('keys', 'on'), ('iam', 'on'), ('iam', 'off')]
    """
    free = [n for n in COMBINATIONS if n not in PAIRED]
    for positions in itertools.product(*(range(len(COMBINATIONS[n])) for n in free)):
        at = dict(zip(free, positions, strict=True))
        for name, sources in PAIRED.items():
            at[name] = functools.reduce(operator.xor, (at[source] for source in sources))
        yield {name: COMBINATIONS[name][at[name]] for name in COMBINATIONS}


def packaged(template: Mapping[str, Any]) -> dict[str, Any]:
    """The template as ``sam package`` leaves it: code locations are S3 URIs."""
    out = copy.deepcopy(dict(template))
    for name, resource in out.get("Resources", {}).items():
        prop = _CODE_PROPERTIES.get(resource.get("Type", ""))
        if prop and isinstance(resource.get("Properties", {}).get(prop), str):
            resource["Properties"][prop] = f"s3://edgeproxy-artifacts/{name}.zip"
    return out


def parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """Defaults of the template's parameters, then ``overrides``, then the pseudo parameters."""
    values: dict[str, Any] = {
        name: spec["Default"]
        for name, spec in template.get("Parameters", {}).items()
        if "Default" in spec
    }
    values.update(overrides)
    values.update(PSEUDO_PARAMETERS)
    return values


def transform_template(
    overrides: Mapping[str, str] | None = None, path: Path | None = None
) -> dict[str, Any]:
    """The CloudFormation template the SAM transform makes of ``path`` with ``overrides``.

    Raises the translator's ``InvalidDocumentException`` when CloudFormation would
    reject the template.
    """
    # The translator builds ARNs from the boto session's region when a template
    # gives none; it must never look for real credentials or a real region here.
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    from samtranslator.translator.transform import transform

    template = load_template(path or default_template_path())
    result: dict[str, Any] = transform(
        packaged(template),
        parameter_values(template, overrides or {}),
        _NoManagedPolicies(),
    )
    return result


def main() -> int:
    """Transform every combination; print one line each; 1 when any fails."""
    # The translator's usage metrics are never published here; their warning is noise.
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    failed = 0
    for overrides in parameter_combinations():
        label = " ".join(f"{k}={v or '(empty)'}" for k, v in overrides.items())
        try:
            resources = transform_template(overrides)["Resources"]
        except Exception as exc:  # the translator's errors carry the message users would see
            failed += 1
            print(f"FAIL {label}: {exc}")
        else:
            print(f"ok   {label}: {len(resources)} resources")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
