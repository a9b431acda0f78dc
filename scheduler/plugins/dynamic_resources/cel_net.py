"""Kubernetes' CEL IP, CIDR and URL libraries (k8s.io/apiserver pkg/cel/library ip.go, cidr.go,
urls.go) for cel-expr-python, which ships none of them.

As with quantity and semver (cel_values), the binding cannot carry opaque objects, so an IP is
a one-key CEL map {IP_KEY: canonical address}, a CIDR {CIDR_KEY: "canonical address/bits"} (the
address as written, not masked, as netip.Prefix keeps it) and a URL {URL_KEY: the text}. Equality
is then upstream's: netip.Addr and netip.Prefix compare by value.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

from cel_expr_python import cel as _cel

from scheduler.plugins.dynamic_resources.cel_values import CELValueError

IP_KEY = "__k8s.ip__"
CIDR_KEY = "__k8s.cidr__"
URL_KEY = "__k8s.url__"

_T = _cel.Type
_OPAQUE = _T.Map(_T.STRING, _T.STRING)
_Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_BITS = re.compile(r"^(0|[1-9][0-9]{0,2})$")


# --- IP ---------------------------------------------------------------------------------------


def _parse_ip(raw: str) -> _Address:
    """library.parseIPAddr: netip.ParseAddr without zones or IPv4-mapped IPv6 addresses."""
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError as err:
        raise CELValueError(
            f"IP Address {_go_quote(raw)} parse error during conversion from string: {err}"
        ) from err
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id is not None:
            raise CELValueError(f"IP address {_go_quote(raw)} with zone value is not allowed")
        if addr.ipv4_mapped is not None:
            raise CELValueError(f"IPv4-mapped IPv6 address {_go_quote(raw)} is not allowed")
    return addr


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ip_value(addr: _Address) -> dict[str, str]:
    return {IP_KEY: str(addr)}


def _need(value: Any, key: str) -> str:
    if isinstance(value, Mapping) and len(value) == 1 and key in value:
        return str(value[key])
    raise CELValueError("no such overload")


def _ip_of(value: Any) -> _Address:
    return ipaddress.ip_address(_need(value, IP_KEY))


def string_to_ip(raw: str) -> dict[str, str]:
    return _ip_value(_parse_ip(raw))


def is_ip(raw: str) -> bool:
    try:
        _parse_ip(raw)
    except CELValueError:
        return False
    return True


def ip_is_canonical(raw: str) -> bool:
    return str(_parse_ip(raw)) == raw


def _family(value: Any) -> int:
    return _ip_of(value).version


_V4_LINK_LOCAL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")
_V6_LINK_LOCAL_MULTICAST = ipaddress.ip_network("ff02::/16")
_V4_BROADCAST = ipaddress.ip_address("255.255.255.255")


def _is_link_local_multicast(value: Any) -> bool:
    addr = _ip_of(value)
    if isinstance(addr, ipaddress.IPv4Address):
        return addr in _V4_LINK_LOCAL_MULTICAST
    return addr in _V6_LINK_LOCAL_MULTICAST


def _is_global_unicast(value: Any) -> bool:
    """netip.Addr.IsGlobalUnicast: private ranges count as global."""
    addr = _ip_of(value)
    return not (
        addr.is_unspecified
        or addr.is_loopback
        or addr.is_multicast
        or addr.is_link_local
        or addr == _V4_BROADCAST
    )


# --- CIDR -------------------------------------------------------------------------------------


def _parse_cidr(raw: str) -> tuple[_Address, int]:
    """library.parseCIDR: netip.ParsePrefix, no IPv4-mapped IPv6 address."""
    prefix = "network address parse error during conversion from string: "
    address, slash, bits = raw.partition("/")
    if not slash:
        raise CELValueError(f"{prefix}netip.ParsePrefix({_go_quote(raw)}): no '/'")
    if "%" in address:
        raise CELValueError(
            f"{prefix}netip.ParsePrefix({_go_quote(raw)}): IPv6 zones cannot be present in a prefix"
        )
    try:
        addr = ipaddress.ip_address(address)
    except ValueError as err:
        raise CELValueError(f"{prefix}netip.ParsePrefix({_go_quote(raw)}): {err}") from err
    limit = 32 if addr.version == 4 else 128
    if not _BITS.match(bits) or int(bits) > limit:
        raise CELValueError(
            f"{prefix}netip.ParsePrefix({_go_quote(raw)}): bad bits after slash: {_go_quote(bits)}"
        )
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise CELValueError(f"IPv4-mapped IPv6 address {_go_quote(raw)} is not allowed")
    return addr, int(bits)


def _cidr_value(addr: _Address, bits: int) -> dict[str, str]:
    return {CIDR_KEY: f"{addr}/{bits}"}


def _cidr_of(value: Any) -> tuple[_Address, int]:
    address, _, bits = _need(value, CIDR_KEY).partition("/")
    return ipaddress.ip_address(address), int(bits)


def string_to_cidr(raw: str) -> dict[str, str]:
    try:
        return _cidr_value(*_parse_cidr(raw))
    except CELValueError as err:
        # Upstream wraps parseCIDR's (already prefixed) error once more.
        raise CELValueError(
            f"network address parse error during conversion from string: {err}"
        ) from err


def is_cidr(raw: str) -> bool:
    try:
        _parse_cidr(raw)
    except CELValueError:
        return False
    return True


def _network(addr: _Address, bits: int) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(f"{addr}/{bits}", strict=False)


def _contains_ip(value: Any, other: Any) -> bool:
    addr, bits = _cidr_of(value)
    ip = _parse_ip(other) if isinstance(other, str) else _ip_of(other)
    return ip.version == addr.version and ip in _network(addr, bits)


def _contains_cidr(value: Any, other: Any) -> bool:
    addr, bits = _cidr_of(value)
    if isinstance(other, str):
        other_addr, other_bits = _cidr_of(string_to_cidr(other))
    else:
        other_addr, other_bits = _cidr_of(other)
    if other_addr.version != addr.version or other_bits < bits:
        return False
    return other_addr in _network(addr, bits)


def _cidr_ip(value: Any) -> dict[str, str]:
    return _ip_value(_cidr_of(value)[0])


def _prefix_length(value: Any) -> int:
    return _cidr_of(value)[1]


def _masked(value: Any) -> dict[str, str]:
    addr, bits = _cidr_of(value)
    return _cidr_value(_network(addr, bits).network_address, bits)


def _to_string(value: Any) -> str:
    """string(ip) and string(cidr): the canonical text."""
    if isinstance(value, Mapping) and IP_KEY in value:
        return _need(value, IP_KEY)
    return _need(value, CIDR_KEY)


# --- URL --------------------------------------------------------------------------------------


def _parse_url(raw: str) -> Any:
    """url.ParseRequestURI's acceptance: an absolute URL or an absolute path."""
    error = f"URL parse error during conversion from string: parse {_go_quote(raw)}: "
    if not raw or any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise CELValueError(error + "invalid URI for request")
    try:
        parts = urlsplit(raw, allow_fragments=False)
        _ = parts.port
    except ValueError as err:
        raise CELValueError(error + str(err)) from err
    if not parts.scheme and not raw.startswith("/"):
        raise CELValueError(error + "invalid URI for request")
    return parts


def string_to_url(raw: str) -> dict[str, str]:
    _parse_url(raw)
    return {URL_KEY: raw}


def is_url(raw: str) -> bool:
    try:
        _parse_url(raw)
    except CELValueError:
        return False
    return True


def _url(value: Any) -> Any:
    return _parse_url(_need(value, URL_KEY))


def _get_scheme(value: Any) -> str:
    return str(_url(value).scheme)


def _get_host(value: Any) -> str:
    return str(_url(value).netloc.rpartition("@")[2])


def _get_hostname(value: Any) -> str:
    host = _get_host(value)
    if host.startswith("["):
        return host[1 : host.find("]")]
    return host.partition(":")[0]


def _get_port(value: Any) -> str:
    host = _get_host(value)
    if host.startswith("["):
        host = host[host.find("]") + 1 :]
    return host.rpartition(":")[2] if ":" in host else ""


def _get_escaped_path(value: Any) -> str:
    return quote(_url(value).path, safe="/!$&'()*+,;=:@%-._~")


def _get_query(value: Any) -> dict[str, list[str]]:
    query: dict[str, list[str]] = {}
    for key, item in parse_qsl(_url(value).query, keep_blank_values=True):
        query.setdefault(key, []).append(item)
    return query


def _overload(
    name: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = False
) -> Any:
    return _cel.Overload(name, ret, params, is_member=member, impl=impl)


def network_functions() -> list[Any]:
    """The declarations of the IP, CIDR and URL functions."""
    s, b, i, o, decl = _T.STRING, _T.BOOL, _T.INT, _OPAQUE, _cel.FunctionDecl
    url_getter = [
        ("getScheme", _get_scheme),
        ("getHost", _get_host),
        ("getHostname", _get_hostname),
        ("getPort", _get_port),
        ("getEscapedPath", _get_escaped_path),
    ]
    ip_predicates: list[tuple[str, Callable[[Any], bool]]] = [
        ("isUnspecified", lambda v: _ip_of(v).is_unspecified),
        ("isLoopback", lambda v: _ip_of(v).is_loopback),
        ("isLinkLocalMulticast", _is_link_local_multicast),
        ("isLinkLocalUnicast", lambda v: _ip_of(v).is_link_local),
        ("isGlobalUnicast", _is_global_unicast),
    ]
    return [
        decl(
            "ip",
            [
                _overload("string_to_ip", o, [s], string_to_ip),
                _overload("cidr_ip", o, [o], _cidr_ip, True),
            ],
        ),
        decl("isIP", [_overload("is_ip", b, [s], is_ip)]),
        decl("ip.isCanonical", [_overload("ip_is_canonical", b, [s], ip_is_canonical)]),
        decl("family", [_overload("ip_family", i, [o], _family, True)]),
        *(decl(n, [_overload(f"ip_{n}", b, [o], f, True)]) for n, f in ip_predicates),
        decl("cidr", [_overload("string_to_cidr", o, [s], string_to_cidr)]),
        decl("isCIDR", [_overload("is_cidr", b, [s], is_cidr)]),
        decl(
            "containsIP",
            [
                _overload("cidr_contains_ip_string", b, [o, s], _contains_ip, True),
                _overload("cidr_contains_ip_ip", b, [o, o], _contains_ip, True),
            ],
        ),
        decl(
            "containsCIDR",
            [
                _overload("cidr_contains_cidr_string", b, [o, s], _contains_cidr, True),
                _overload("cidr_contains_cidr", b, [o, o], _contains_cidr, True),
            ],
        ),
        decl("prefixLength", [_overload("cidr_prefix_length", i, [o], _prefix_length, True)]),
        decl("masked", [_overload("cidr_masked", o, [o], _masked, True)]),
        decl("string", [_overload("k8s_net_to_string", s, [o], _to_string)]),
        decl("url", [_overload("string_to_url", o, [s], string_to_url)]),
        decl("isURL", [_overload("is_url", b, [s], is_url)]),
        *(decl(n, [_overload(f"url_{n}", s, [o], f, True)]) for n, f in url_getter),
        decl(
            "getQuery",
            [_overload("url_get_query", _T.Map(s, _T.List(s)), [o], _get_query, True)],
        ),
    ]
