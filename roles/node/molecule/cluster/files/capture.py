# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Capture every IPv4 packet on INTERFACE (promiscuous) for SECONDS and print, as JSON, for each flow
("src>dst proto/dport") its packets and bytes, and which of the NEEDLES (texts) its
payloads hold. A raw AF_PACKET socket: needs CAP_NET_RAW, nothing installed.

    python3 capture.py INTERFACE SECONDS NEEDLE...
"""
import json
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1


def capture(interface, seconds, needles):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.bind((interface, 0))
    index = socket.if_nametoindex(interface)
    sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, struct.pack("iHH8s", index, PACKET_MR_PROMISC, 0, b""))
    sock.settimeout(0.5)
    flows = {}
    end = time.time() + seconds
    while time.time() < end:
        try:
            frame = sock.recv(65535)
        except socket.timeout:
            continue
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        header = (ip[0] & 0x0F) * 4
        proto = {6: "tcp", 17: "udp"}.get(ip[9])
        if proto is None:
            continue
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        dport = struct.unpack("!H", ip[header + 2:header + 4])[0]
        payload = ip[header + (((ip[header + 12] >> 4) * 4) if proto == "tcp" else 8):]
        flow = flows.setdefault("%s>%s %s/%d" % (src, dst, proto, dport), {"packets": 0, "bytes": 0, "found": []})
        flow["packets"] += 1
        flow["bytes"] += len(payload)
        flow["found"] = sorted(set(flow["found"]) | set(n.decode() for n in needles if n in payload))
    return flows


if __name__ == "__main__":
    print(json.dumps(capture(sys.argv[1], float(sys.argv[2]), [n.encode() for n in sys.argv[3:]]), sort_keys=True))
