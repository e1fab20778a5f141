"""Credential files and configs: .netrc, .pgpass, Docker's config.json, Bundler, a network
device's config, Wi-Fi settings, Kubernetes Secret manifests.

Each format says where its secret is (a position in a line, a key that is always the
password's), so the value is taken by position rather than judged by its shape. A Kubernetes
Secret's values are found by a pass of their own (`_k8s_secrets`, after the rules): every value
under its `data:` or `stringData:`, whatever its key is called.
"""

from __future__ import annotations

import re
from collections import Counter

from .labels import _LABEL_MARK, label_for
from .rule import _TOKCH, _cmd_check, _not_placeholder, _Rule
from .values import _is_placeholder, _value_check

# Bundler's credentials for a gem server: `BUNDLE_GEMS__CONTRIBSYS__COM: "user:pass"`
_RULE_BUNDLER = _Rule(
    "password-assignment",
    r"BUNDLE_[A-Z0-9_]*__[A-Z0-9_]+[\"']?[ \t]*[:=][ \t]*[\"']?[^:\"'\s]{1,128}:(?P<s>[^\"'\s]{4,256})",
    ("bundle_",),
    check=_not_placeholder,
)
# a network device's config: `username admin password 0 X`, `enable secret 0 X` (type 0: clear text)
_RULE_DEVICE_PASSWORD = _Rule(
    "password-assignment",
    r"(?im:^[ \t]*(?:username[ \t]+\S+[ \t]+(?:privilege[ \t]+\d+[ \t]+)?|enable[ \t]+|)(?:password|secret)[ \t]+0[ \t]+(?P<s>\S{1,128})$)",
    check=_not_placeholder,
    hints=("password 0 ", "secret 0 "),
)
# ~/.netrc: `machine host login me password X`
_RULE_NETRC = _Rule(
    "password-assignment",
    r"login[ \t]+\S+\s+(?:account[ \t]+\S+\s+)?password[ \t]+(?P<s>[^\s\"'<>]+)",
    check=_cmd_check,
    lb=_TOKCH,
)


# ~/.pgpass: hostname:port:database:username:password
_RULE_PGPASS = _Rule(
    "password-assignment",
    r"(?<![^\s])[A-Za-z0-9_.\-*]{1,253}:(?:[0-9]{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}:(?P<s>(?:[^\s:\\]|\\.){1,512})(?![^\s])",
    check=_value_check,
    pre=r":(?:[0-9]{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}:",
)
# ~/.docker/config.json: "auth": "<base64 of user:password>"
_RULE_DOCKER_AUTH = _Rule(
    "password-assignment",
    r"\"auth\"[ \t]*:[ \t]*\"(?P<s>[A-Za-z0-9+/]{8,1024}={0,2})\"",
    ('"auth"',),
    check=_value_check,
)


# --- Kubernetes Secret manifests ------------------------------------------------------------------
_K8S_SECRET = re.compile(r"""kind["']?[ \t]*:[ \t]*["']?Secret\b""")
_K8S_DATA_YAML = re.compile(r"(?m)^(?P<ind>[ \t]*)(?:data|stringData):[ \t]*\r?$")
#: The value ends at its line's last character that is no space or tab (one way only: a lazy
#: `[^\r\n]{0,8192}?` before `[ \t]*` tried every end in a run of spaces, O(n^2) on a long line).
_K8S_ITEM_YAML = re.compile(
    r"(?P<ind>[ \t]+)(?P<key>[^\s:#][^:\r\n]{0,252}):[ \t]*(?P<s>[^\s#](?:[^\r\n]{0,8191}[^ \t\r\n])?)[ \t]*\r?$",
    re.M,
)
_K8S_DATA_FLAT = re.compile(
    r"(?<![\w.\-])(?:data|stringData):[ \t]+(?P<pairs>(?:[\w.\-]{1,253}:[ \t]+[^\s]{1,8192}[ \t]*){1,64})"
)
_K8S_ITEM_FLAT = re.compile(r"(?P<key>[\w.\-]{1,253}):[ \t]+(?P<s>[^\s]{1,8192})")
_K8S_TOP_KEYS = frozenset("apiVersion kind metadata type immutable name namespace labels annotations".split())
_K8S_DATA_JSON = re.compile(r"""["'](?:data|stringData)["'][ \t]*:[ \t]*\{(?P<body>[^{}]{0,65536})\}""")
_K8S_ITEM_JSON = re.compile(r"""["'][^"'\r\n]{1,253}["'][ \t]*:[ \t]*["'](?P<s>[^"'\r\n]{1,8192})["']""")


def _k8s_secrets(text: str, counts: Counter) -> str:
    """Redact every value under ``data:`` / ``stringData:`` of a Kubernetes Secret (YAML or JSON)."""
    if not _K8S_SECRET.search(text):
        return text
    spans: list[tuple[int, int]] = []
    for m in _K8S_DATA_YAML.finditer(text):
        indent = len(m.group("ind"))
        pos = m.end() + 1
        while pos < len(text):
            item = _K8S_ITEM_YAML.match(text, pos)
            if item is None or len(item.group("ind")) <= indent:
                break
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append(item.span("s"))
            nl = text.find("\n", item.end())
            if nl == -1:
                break
            pos = nl + 1
    for m in _K8S_DATA_FLAT.finditer(text):  # a manifest squeezed onto one line
        for item in _K8S_ITEM_FLAT.finditer(m.group("pairs")):
            if item.group("key") in _K8S_TOP_KEYS:
                break
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append((m.start("pairs") + item.start("s"), m.start("pairs") + item.end("s")))
    for m in _K8S_DATA_JSON.finditer(text):
        base = m.start("body")
        for item in _K8S_ITEM_JSON.finditer(m.group("body")):
            if not _is_placeholder(item.group("s")) and _LABEL_MARK not in item.group("s"):
                spans.append((base + item.start("s"), base + item.end("s")))
    if not spans:
        return text
    out: list[str] = []
    copied = 0
    for s, e in sorted(spans):
        if s < copied:
            continue
        out += [text[copied:s], label_for("k8s-secret")]
        copied = e
        counts["k8s-secret"] += 1
    out.append(text[copied:])
    return "".join(out)


# a Wi-Fi QR code's payload: `WIFI:T:WPA;S:<ssid>;P:<password>;;`
_RULE_WIFI_QR = _Rule(
    "password",
    r"WIFI:(?:[^;\n]{0,80};){0,4}?P:(?P<s>(?:\\.|[^;\\\n]){1,63});",
    ("wifi:",),
    check=_not_placeholder,
)
# a Wi-Fi network's pre-shared key in wpa_supplicant.conf / hostapd.conf / NetworkManager
_RULE_PSK = _Rule(
    "password",
    r"(?<![A-Za-z0-9_])(?:psk|sae_password|wpa_psk)[ \t]*=[ \t]*\"(?P<s>[^\"\n]{8,63})\"",
    ("psk", "sae_password"),
    check=_not_placeholder,
)
