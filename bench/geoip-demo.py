#!/usr/bin/env python3
"""Writes dnz's synthetic demo GeoIP database as an .mmdb file, for bench/run.

dnz builds its demo database in memory (`dnz serve --demo`, crates/geo/src/demo.rs) and never
writes it to disk; gdnsd and PowerDNS need a file. This writes one with the same places, in
the MaxMind DB format 2.0 and the MaxMind/DB-IP schema (country.iso_code, continent.code), so
that dnz (which loads <data dir>/geoip-country.mmdb at start), gdnsd's geoip plugin and
PowerDNS's geoip backend (libmaxminddb) all place a client the same way. Only the
documentation ranges are placed; it is labelled as synthetic in its metadata.

    bench/geoip-demo.py OUT.mmdb

Standard library only. Keep PLACES in step with geo::demo::PLACES.
"""

import ipaddress
import struct
import sys

# (network, country, continent), as in crates/geo/src/demo.rs.
PLACES = [
    ("192.0.2.0/25", "ID", "AS"),
    ("192.0.2.128/26", "SG", "AS"),
    ("192.0.2.192/26", "FR", "EU"),
    ("198.51.100.0/24", "DE", "EU"),
    ("203.0.113.0/25", "US", "NA"),
    ("203.0.113.128/25", "BR", "SA"),
    ("2001:db8::/34", "ID", "AS"),
    ("2001:db8:4000::/34", "DE", "EU"),
    ("2001:db8:8000::/34", "US", "NA"),
    ("2001:db8:c000::/34", "BR", "SA"),
]

DATABASE_TYPE = "dnz-Demo-Country"
DESCRIPTION = "dnz demo: synthetic data placing documentation ranges only"
# Fixed, so the file is the same on every run (2026-01-01T00:00:00Z).
BUILD_EPOCH = 1767225600
RECORD_SIZE = 24

# --- data section encoding (MaxMind DB spec, "Output Data Section") ------------------------


def control(type_, size):
    """Control byte(s) for a type and a payload size."""
    if size < 29:
        first, extra = size, b""
    elif size < 29 + 256:
        first, extra = 29, bytes([size - 29])
    elif size < 285 + 65536:
        first, extra = 30, struct.pack(">H", size - 285)
    else:
        first, extra = 31, struct.pack(">I", size - 65821)[1:]
    if type_ <= 7:
        return bytes([(type_ << 5) | first]) + extra
    # Extended types: type bits 0, then a byte with type - 7, then the size bytes.
    return bytes([first, type_ - 7]) + extra


def encode(value):
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return control(2, len(raw)) + raw
    if isinstance(value, dict):
        out = control(7, len(value))
        for key, item in value.items():
            out += encode(key) + encode(item)
        return out
    if isinstance(value, list):
        out = control(11, len(value))
        for item in value:
            out += encode(item)
        return out
    if isinstance(value, tuple):  # (type, int): uint16 = 5, uint32 = 6, uint64 = 9
        type_, number = value
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return control(type_, len(raw)) + raw
    raise TypeError(f"cannot encode {value!r}")


def uint16(n):
    return (5, n)


def uint32(n):
    return (6, n)


def uint64(n):
    return (9, n)


# --- search tree -----------------------------------------------------------------------------


def bits_of(network):
    """The network's prefix bits in the IPv6 tree (IPv4 lives at ::/96, as MaxMind's does)."""
    if network.version == 4:
        value, length = int(network.network_address), 96 + network.prefixlen
    else:
        value, length = int(network.network_address), network.prefixlen
    return [(value >> (127 - i)) & 1 for i in range(length)]


def build():
    data = b""
    offsets = {}
    # nodes[i] = [left, right]; None: empty, int: node, ("data", offset): data.
    nodes = [[None, None]]
    for text, country, continent in PLACES:
        record = {"continent": {"code": continent}, "country": {"iso_code": country}}
        key = (country, continent)
        if key not in offsets:
            offsets[key] = len(data)
            data += encode(record)
        bits = bits_of(ipaddress.ip_network(text))
        node = 0
        for depth, bit in enumerate(bits):
            last = depth == len(bits) - 1
            if last:
                if nodes[node][bit] is not None:
                    raise ValueError(f"{text} overlaps an earlier network")
                nodes[node][bit] = ("data", offsets[key])
            else:
                child = nodes[node][bit]
                if child is None:
                    nodes.append([None, None])
                    child = len(nodes) - 1
                    nodes[node][bit] = child
                elif isinstance(child, tuple):
                    raise ValueError(f"{text} is inside an earlier network")
                node = child
    count = len(nodes)

    def value(record):
        if record is None:
            return count
        if isinstance(record, tuple):
            return count + 16 + record[1]
        return record

    tree = b""
    for left, right in nodes:
        tree += value(left).to_bytes(3, "big") + value(right).to_bytes(3, "big")
    metadata = {
        "binary_format_major_version": uint16(2),
        "binary_format_minor_version": uint16(0),
        "build_epoch": uint64(BUILD_EPOCH),
        "database_type": DATABASE_TYPE,
        "description": {"en": DESCRIPTION},
        "ip_version": uint16(6),
        "languages": ["en"],
        "node_count": uint32(count),
        "record_size": uint16(RECORD_SIZE),
    }
    return tree + bytes(16) + data + b"\xab\xcd\xefMaxMind.com" + encode(metadata)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/geoip-demo.py OUT.mmdb")
    with open(sys.argv[1], "wb") as out:
        out.write(build())


if __name__ == "__main__":
    main()
