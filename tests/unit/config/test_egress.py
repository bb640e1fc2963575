"""The egress rule at load time: every special-purpose address, in every textual form, is refused."""

from __future__ import annotations

from typing import Any

import pytest

from edgeproxy.config.egress import EgressSettings, url_problem
from edgeproxy.config.loader import from_document, parse_config, to_document
from edgeproxy.errors import ConfigError, EntryRefused

# The 17 hostile base URLs of the probe, and the textual forms of loopback.
REFUSED = [
    "http://169.254.169.254/latest/meta-data",
    "http://[fd00:ec2::254]/",
    "http://127.0.0.1:8080/v1",
    "http://127.1:8080/v1",
    "http://2130706433/v1",
    "http://0x7f.1/v1",
    "http://0177.0.0.1/v1",
    "http://0x7f000001/v1",
    "http://127.0.0.1./v1",
    "http://[::1]/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://[::ffff:169.254.169.254]/v1",
    "http://[64:ff9b::a9fe:a9fe]/v1",
    "http://[2002:a9fe:a9fe::]/v1",
    "http://10.1.2.3/v1",
    "http://172.16.0.1/v1",
    "http://192.168.1.1/v1",
    "http://100.64.0.1/v1",
    "http://0.0.0.0/v1",
    "http://0/v1",
    "http://[::]/v1",
    "http://224.0.0.251/v1",
    "http://[ff02::1]/v1",
    "http://[fe80::1%25eth0]/v1",
    "http://169.254.0.1/v1",
    "http://[fc00::1]/v1",
    "http://240.0.0.1/v1",
    "http://198.18.0.1/v1",
]


def dep(base_url: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": "d",
        "model": "m",
        "provider": "openai_compat",
        "base_url": base_url,
        "upstream_model": "u",
        **fields,
    }


@pytest.mark.parametrize("url", REFUSED)
def test_every_special_purpose_address_is_refused(url: str) -> None:
    with pytest.raises(EntryRefused) as caught:
        parse_config({"deployments": [dep(url)]}, "edgeproxy.yaml")
    assert caught.value.param == "base_url"
    assert str(caught.value).startswith("edgeproxy.yaml: deployments[0].base_url: ")


@pytest.mark.parametrize(
    "url", ["https://api.openai.com/v1", "https://8.8.8.8/v1", "http://[2606:4700::1111]/v1"]
)
def test_public_addresses_and_names_load(url: str) -> None:
    assert parse_config({"deployments": [dep(url)]}, "x").deployments[0].base_url == url


def test_the_allow_list_takes_ranges_and_names_but_not_odd_spellings() -> None:
    allow = EgressSettings(allow=["127.0.0.0/8", "10.0.0.12", "vllm.internal"])
    assert url_problem("http://127.0.0.1:9/v1", allow) is None
    assert url_problem("http://10.0.0.12:8000/v1", allow) is None
    assert url_problem("http://10.0.0.13:8000/v1", allow) is not None
    assert allow.allows_host("VLLM.internal.")
    # Allowed or not, a non-standard form never loads: aiohttp refuses to connect to it.
    assert "non-standard" in (url_problem("http://127.1:9/v1", allow) or "")
    with pytest.raises(ConfigError, match="neither a host name nor an address range"):
        parse_config({"gateway": {"egress": {"allow": ["http://x/"]}}}, "x")
    cfg = {"deployments": [dep("http://127.0.0.1:9/v1")], "gateway": {"egress": {"allow": ["::1"]}}}
    with pytest.raises(EntryRefused, match=r"127\.0\.0\.1 is loopback"):
        parse_config(cfg, "x")


@pytest.mark.parametrize(
    "host",
    [
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::ffff:0:127.0.0.1]",
        "[::127.0.0.1]",
        "[::7f00:1]",
        "[::ffff:10.0.0.12]",
    ],
)
def test_ipv4_written_as_ipv6_is_refused_even_where_the_ipv4_address_is_allowed(host: str) -> None:
    allow = EgressSettings(allow=["127.0.0.0/8", "10.0.0.12", "::/0"])
    assert "IPv4 written as IPv6" in (url_problem(f"http://{host}:9/v1", allow) or "")
    # An allowed IPv4 range does not extend to the IPv6 addresses carrying it.
    v4_only = EgressSettings(allow=["127.0.0.0/8"])
    for carried in ("[2002:7f00:1::]", "[64:ff9b::7f00:1]"):
        assert "carries 127.0.0.1" in (url_problem(f"http://{carried}/v1", v4_only) or "")


@pytest.mark.parametrize("port", ["65536", "70000", "99999999", "-1", "8o"])
def test_a_port_outside_0_to_65535_is_refused_where_the_configuration_comes_in(port: str) -> None:
    url = f"https://api.openai.com:{port}/v1"
    with pytest.raises(EntryRefused, match="port") as caught:
        parse_config({"deployments": [dep(url)]}, "x")
    assert caught.value.param == "base_url"
    assert url_problem("https://api.openai.com:65535/v1", EgressSettings()) is None


def test_a_stored_document_still_loads_so_an_upgrade_cannot_take_the_gateway_down() -> None:
    loaded = parse_config({"deployments": [dep("http://10.0.0.1/v1")]}, "x", entry=False)
    assert from_document(to_document(loaded)).deployments[0].base_url == "http://10.0.0.1/v1"


@pytest.mark.parametrize(
    "credential",
    [
        "env:AWS_SECRET_ACCESS_KEY",
        "env:EDGEPROXY_LOCAL_ADMIN_KEY",
        "env:OPENAI_API_KEY",
        "ssm:/other-stack/key",
        "secretsmanager:arn:aws:secretsmanager:us-east-1:1:secret:x",
        "vault:/x",
        # Control characters forge log lines where a reference is shown.
        "env:EDGEPROXY_CRED_X\n2026-01-01 INFO forged line",
        "env:EDGEPROXY_CRED_X\r",
        "ssm:/edgeproxy/a\x00b",
        "ssm:/edgeproxy/a\x1b[31m",
        "env:EDGEPROXY_CRED_X\u2028",
        "env:EDGEPROXY_CRED_ X",
    ],
)
def test_credential_references_outside_the_prefixes_are_refused(credential: str) -> None:
    with pytest.raises(EntryRefused) as caught:
        parse_config(
            {"deployments": [dep("https://api.openai.com/v1", credential=credential)]}, "x"
        )
    assert caught.value.param == "credential"
    assert "deployments[0].credential" in str(caught.value)
    assert "\n" not in str(caught.value)  # shown escaped, never raw


def test_credential_references_under_the_prefixes_load() -> None:
    for credential in (
        "env:EDGEPROXY_CRED_OPENAI",
        "ssm:/edgeproxy/openai",
        "secretsmanager:edgeproxy/x",
    ):
        parse_config(
            {"deployments": [dep("https://api.openai.com/v1", credential=credential)]}, "x"
        )
