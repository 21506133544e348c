"""Prints the entries of the fatbins in the gpu.binary ops of an MLIR file.

Usage: fatbin-entries.py FILE.mlir
For each object: "object <chip>: fatbin version V, N bytes" then one line per
entry ("elf sm_80", "ptx sm_90"), read from the fatbin's headers (magic
0xBA55ED50, 16-byte header, then entries each with a header giving its kind,
size and architecture).
"""
import re
import struct
import sys


def unescape(text):
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            pair = text[i + 1:i + 3]
            if re.fullmatch(r"[0-9A-Fa-f]{2}", pair):
                out.append(int(pair, 16))
                i += 3
                continue
            out.append(ord(text[i + 1]))
            i += 2
            continue
        out.append(ord(text[i]))
        i += 1
    return bytes(out)


source = open(sys.argv[1]).read()
for chip, body in re.findall(
        r'#gpu\.object<#nvvm\.target<[^>]*chip = "(sm_\d+)"[^>]*>,'
        r'(?: properties = \{[^}]*\},)? "((?:[^"\\]|\\.)*)"', source):
    data = unescape(body)
    magic, version, header, size = struct.unpack_from("<IHHQ", data, 0)
    if magic != 0xBA55ED50 or header + size != len(data):
        print(f"object {chip}: not a fatbin")
        continue
    print(f"object {chip}: fatbin version {version}, {len(data)} bytes")
    at = header
    while at < header + size:
        kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, at)
        arch = struct.unpack_from("<I", data, at + 28)[0]
        print(f"  {({1: 'ptx', 2: 'elf'}).get(kind, kind)} sm_{arch}")
        at += entry_header + payload
