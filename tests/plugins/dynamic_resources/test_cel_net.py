"""Kubernetes' IP, CIDR and URL CEL libraries in device selectors, against the examples
k8s.io/apiserver documents in pkg/cel/library ip.go, cidr.go and urls.go (also listed in
"CEL in Kubernetes")."""

from __future__ import annotations

import re

import pytest

from scheduler.plugins.dynamic_resources.cel import CELError
from tests.plugins.dynamic_resources.cel_kit import device
from tests.plugins.dynamic_resources.cel_kit import run as run_on

_DEVICE = device({"addr": {"string": "10.1.2.3"}})


def run(expression: str) -> bool:
    return run_on(expression, _DEVICE)


DOCUMENTED = [
    "ip('127.0.0.1').family() == 4",
    "ip('::1').family() == 6",
    "ip('0.0.0.0').isUnspecified()",
    "!ip('127.0.0.1').isUnspecified()",
    "ip('::').isUnspecified()",
    "ip('127.0.0.1').isLoopback()",
    "!ip('192.168.0.1').isLoopback()",
    "ip('::1').isLoopback()",
    "!ip('2001:db8::abcd').isLoopback()",
    "ip('224.0.0.1').isLinkLocalMulticast()",
    "!ip('224.0.1.1').isLinkLocalMulticast()",
    "ip('ff02::1').isLinkLocalMulticast()",
    "!ip('fd00::1').isLinkLocalMulticast()",
    "ip('169.254.169.254').isLinkLocalUnicast()",
    "!ip('192.168.0.1').isLinkLocalUnicast()",
    "ip('fe80::1').isLinkLocalUnicast()",
    "!ip('fd80::1').isLinkLocalUnicast()",
    "ip('192.168.0.1').isGlobalUnicast()",
    "!ip('255.255.255.255').isGlobalUnicast()",
    "ip('2001:db8::abcd').isGlobalUnicast()",
    "!ip('ff00::1').isGlobalUnicast()",
    "isIP('1.2.3.4')",
    "!isIP('1.2.3')",
    "!isIP('::ffff:1.2.3.4')",
    "!isIP('fe80::1%eth0')",
    "ip.isCanonical('127.0.0.1')",
    "!ip.isCanonical('2001:DB8::1')",
    "ip('2001:db8::1') == ip('2001:DB8::1')",
    "string(ip('2001:DB8::1')) == '2001:db8::1'",
    "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
    "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
    "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
    "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))",
    "!cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))",
    "cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')",
    "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
    "cidr('192.168.0.1/24').ip().family() == 4",
    "cidr('::1/128').ip() == ip('::1')",
    "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
    "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
    "cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
    "cidr('192.168.0.0/16').prefixLength() == 16",
    "cidr('::1/128').prefixLength() == 128",
    "isCIDR('10.0.0.0/8')",
    "!isCIDR('10.0.0.0')",
    "!isCIDR('10.0.0.0/33')",
    "string(cidr('192.168.0.1/24')) == '192.168.0.1/24'",
    "url('https://example.com:80/').getHost() == 'example.com:80'",
    "url('https://example.com/').getHost() == 'example.com'",
    "url('https://[::1]:80/').getHost() == '[::1]:80'",
    "url('https://[::1]/').getHostname() == '::1'",
    "url('/path').getHost() == ''",
    "url('https://example.com:80/').getPort() == '80'",
    "url('https://example.com/').getPort() == ''",
    "url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'",
    "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
    "url('https://example.com/').getScheme() == 'https'",
    "url('/path').getScheme() == ''",
    "isURL('https://example.com/')",
    "!isURL('example.com')",
    "isURL('/absolute-path')",
    "url('https://[::1]:80/').getHostname() == '::1'",
    "url('https://example.com:80/').getHostname() == 'example.com'",
]


@pytest.mark.parametrize("expression", DOCUMENTED)
def test_documented_results(expression: str) -> None:
    assert run(expression)


def test_on_an_attribute() -> None:
    assert run('cidr("10.0.0.0/8").containsIP(device.attributes["dra.example.com"].addr)')
    assert run('isIP(device.attributes["dra.example.com"].addr)')


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "ip('1.2.3').family() == 4",
            'IP Address "1.2.3" parse error during conversion from string: ',
        ),
        (
            "ip('::ffff:1.2.3.4').family() == 4",
            'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed',
        ),
        (
            "ip('fe80::1%eth0').family() == 6",
            'IP address "fe80::1%eth0" with zone value is not allowed',
        ),
        (
            "cidr('10.0.0.0').prefixLength() == 8",
            "network address parse error during conversion from string: network address parse "
            "error during conversion from string: netip.ParsePrefix(\"10.0.0.0\"): no '/'",
        ),
        ("url('x').getHost() == ''", 'URL parse error during conversion from string: parse "x"'),
        ("quantity('1').family() == 4", "no such overload"),
    ],
)
def test_runtime_errors(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=re.escape(message)):
        run(expression)


def test_wrong_argument_type_is_a_compile_error() -> None:
    with pytest.raises(CELError, match="found no matching overload for 'ip'"):
        run("ip(1).family() == 4")
