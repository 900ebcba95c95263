# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """A stand-in for exo's executable (the tinygrad line, exo/main.py at e4238f9ef).

It accepts exo's command line and fails where exo fails on it (an unknown flag, manual discovery
without --discovery-config-path), then:

- records its arguments, environment, user, CPU affinity, NUMA memory policy, which device
  nodes it can open (/dev/nvidia*, /dev/nvidia-caps/*, /dev/dri/*, /dev/kfd: "opened", or the
  errno, EPERM when the device cgroup denies it, ENXIO when allowed but no driver answers), the
  manual-discovery topology as exo reads it and, with EXO_STANDIN_TINYGRAD=1, what tinygrad
  selects and computes, in $EXO_HOME/standin/record.json;
- holds the ports exo holds: the gRPC node port (TCP), the API port (TCP, answering GET with the
  record, its device and topology parts read again) and, with UDP discovery, the listen port;
- runs until SIGTERM or SIGINT.

It serves no model. Tests use it to see what each exo instance would be given and could reach.
"""

import argparse
import ctypes
import errno
import glob
import json
import os
import platform
import signal
import socket
import sys
import threading
import time
import uuid

from http.server import BaseHTTPRequestHandler, HTTPServer

from gpufleet_exo_standin import __version__

DEVICE_GLOBS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*", "/dev/kfd")
# get_mempolicy(2) by machine, and its mode numbers (linux/mempolicy.h).
GET_MEMPOLICY = {"x86_64": 239, "aarch64": 236, "ppc64le": 260}
MEMPOLICY_MODES = {0: "default", 1: "preferred", 2: "bind", 3: "interleave", 4: "local", 5: "preferred_many",
                   6: "weighted_interleave"}
MAX_NUMA_NODES = 1024


def build_parser():
    """exo's flags, names, types and defaults as exo/main.py declares them."""
    parser = argparse.ArgumentParser(
        prog="exo",
        description="exo stand-in %s: takes exo's flags, records what it was given and can reach, serves no model"
        % __version__)
    parser.add_argument("command", nargs="?", choices=["run", "eval", "train"], help="Command to run")
    parser.add_argument("model_name", nargs="?", help="Model name to run")
    parser.add_argument("--default-model", type=str, default=None)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--data", type=str, default="exo/train/data/lora")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--resume-checkpoint", type=str, default=None)
    parser.add_argument("--save-checkpoint-dir", type=str, default="checkpoints")
    parser.add_argument("--node-id", type=str, default=None)
    parser.add_argument("--node-host", type=str, default="0.0.0.0")
    parser.add_argument("--node-port", type=int, default=None)
    parser.add_argument("--models-seed-dir", type=str, default=None)
    parser.add_argument("--listen-port", type=int, default=5678)
    parser.add_argument("--download-quick-check", action="store_true")
    parser.add_argument("--max-parallel-downloads", type=int, default=8)
    parser.add_argument("--broadcast-port", type=int, default=5678)
    parser.add_argument("--discovery-module", type=str, choices=["udp", "tailscale", "manual"], default="udp")
    parser.add_argument("--discovery-timeout", type=int, default=30)
    parser.add_argument("--discovery-config-path", type=str, default=None)
    parser.add_argument("--wait-for-peers", type=int, default=0)
    parser.add_argument("--chatgpt-api-port", type=int, default=52415)
    parser.add_argument("--chatgpt-api-response-timeout", type=int, default=900)
    parser.add_argument("--max-generate-tokens", type=int, default=10000)
    parser.add_argument("--inference-engine", type=str, default=None)
    if hasattr(argparse, "BooleanOptionalAction"):
        parser.add_argument("--disable-tui", action=argparse.BooleanOptionalAction)
    else:  # Python 3.8: the same two spellings by hand
        parser.add_argument("--disable-tui", dest="disable_tui", action="store_true", default=None)
        parser.add_argument("--no-disable-tui", dest="disable_tui", action="store_false")
    parser.add_argument("--run-model", type=str)
    parser.add_argument("--prompt", type=str, default="Who are you?")
    parser.add_argument("--default-temp", type=float, default=0.0)
    parser.add_argument("--tailscale-api-key", type=str, default=None)
    parser.add_argument("--tailnet-name", type=str, default=None)
    parser.add_argument("--node-id-filter", type=str, default=None)
    parser.add_argument("--interface-type-filter", type=str, default=None)
    parser.add_argument("--system-prompt", type=str, default=None)
    return parser


def probe_devices():
    """Each device node and whether this process may open it: "opened" or the errno name."""
    result = {}
    for pattern in DEVICE_GLOBS:
        for path in sorted(glob.glob(pattern)):
            if os.path.isdir(path):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError as exc:
                result[path] = errno.errorcode.get(exc.errno, str(exc.errno))
            else:
                os.close(fd)
                result[path] = "opened"
    return result


def numa_policy():
    """The memory policy systemd's NUMAPolicy=/NUMAMask= gave this process."""
    number = GET_MEMPOLICY.get(platform.machine())
    if number is None:
        return {"error": "get_mempolicy is not known on %s" % platform.machine()}
    libc = ctypes.CDLL(None, use_errno=True)
    words = MAX_NUMA_NODES // (8 * ctypes.sizeof(ctypes.c_ulong))
    mode = ctypes.c_int(0)
    mask = (ctypes.c_ulong * words)()
    rc = libc.syscall(number, ctypes.byref(mode), mask, ctypes.c_ulong(MAX_NUMA_NODES), None, ctypes.c_ulong(0))
    if rc != 0:
        code = ctypes.get_errno()
        return {"error": errno.errorcode.get(code, str(code))}
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    nodes = [n for n in range(MAX_NUMA_NODES) if (mask[n // bits] >> (n % bits)) & 1]
    return {"mode": MEMPOLICY_MODES.get(mode.value, mode.value), "nodes": nodes}


def read_topology(args, node_id):
    """The manual-discovery file as exo reads it: its peers, and whether this node is among them."""
    if args.discovery_module != "manual":
        return None
    path = args.discovery_config_path
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (OSError, IOError, ValueError) as exc:
        return {"path": path, "error": "%s: %s" % (type(exc).__name__, exc)}
    peers = data.get("peers") or {}
    return {"path": path, "peers": peers, "found_self": node_id in peers}


def tinygrad_check():
    """What tinygrad selects in this environment, and whether it computes there."""
    try:
        from importlib import metadata
        version = metadata.version("tinygrad")
    except Exception as exc:  # pylint: disable=broad-except
        return {"error": "tinygrad is not installed: %s" % exc}
    try:
        from tinygrad import Device, Tensor
        default = Device.DEFAULT
        values = (Tensor([1.0, 2.0, 3.0]) + 1).tolist()
    except Exception as exc:  # pylint: disable=broad-except
        return {"version": version, "error": "%s: %s" % (type(exc).__name__, exc)}
    return {"version": version, "default": default, "result": values}


def write_record(path, record):
    partial = path + ".partial"
    with open(partial, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    os.replace(partial, path)


def bind(kind, host, port):
    sock = socket.socket(socket.AF_INET, kind)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port or 0))
    if kind == socket.SOCK_STREAM:
        sock.listen(16)
    return sock


def serve_grpc_port(sock, stop):
    """Accept and close: the port is held and answers, as exo's gRPC server's would."""
    sock.settimeout(0.5)
    while not stop.is_set():
        try:
            conn = sock.accept()[0]
        except socket.timeout:
            continue
        except OSError:
            return
        conn.close()


def make_handler(snapshot):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the name http.server calls
            answer = snapshot()
            if self.path == "/v1/topology":
                # exo's shape; the stand-in lists every peer of its topology file, reachable or not.
                answer = {"nodes": dict((answer["topology"] or {}).get("peers") or {answer["node_id"]: {}})}
            body = json.dumps(answer, indent=2, sort_keys=True).encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.discovery_module == "manual" and not args.discovery_config_path:
        # exo raises this ValueError at start-up.
        parser.exit(1, "ValueError: --discovery-config-path is required when using manual discovery. "
                       "Please provide a path to a config json file.\n")

    node_id = args.node_id or str(uuid.uuid4())
    exo_home = os.environ.get("EXO_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "exo")
    state_dir = os.path.join(exo_home, "standin")
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir)
    record_path = os.path.join(state_dir, "record.json")

    try:
        # The handler reads snapshot(), defined below once the record exists: hence the lambda.
        grpc_sock = bind(socket.SOCK_STREAM, args.node_host, args.node_port)
        udp_sock = bind(socket.SOCK_DGRAM, "0.0.0.0", args.listen_port) if args.discovery_module == "udp" else None
        api = HTTPServer(("0.0.0.0", args.chatgpt_api_port), make_handler(lambda: snapshot()))  # pylint: disable=unnecessary-lambda
    except OSError as exc:
        write_record(record_path, {"node_id": node_id, "argv": sys.argv, "error": "binding a port: %s" % exc,
                                   "started_at": time.time()})
        print("exo stand-in: cannot hold a port: %s" % exc, file=sys.stderr)
        return 1

    record = {
        "standin_version": __version__,
        "argv": list(sys.argv),
        "args": vars(args),
        "environ": dict(os.environ),
        "pid": os.getpid(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "cwd": os.getcwd(),
        "python": {"executable": sys.executable, "version": platform.python_version()},
        "node_id": node_id,
        "node_id_source": "argument" if args.node_id else "generated",
        "ports": {
            "node": grpc_sock.getsockname()[1],
            "api": api.server_address[1],
            "listen": udp_sock.getsockname()[1] if udp_sock else None,
            "broadcast": args.broadcast_port if udp_sock else None,
        },
        "devices": probe_devices(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "numa": numa_policy(),
        "topology": read_topology(args, node_id),
        "tinygrad": tinygrad_check() if os.environ.get("EXO_STANDIN_TINYGRAD") == "1" else None,
        "started_at": time.time(),
    }

    def snapshot():
        return dict(record, devices=probe_devices(), topology=read_topology(args, node_id))

    write_record(record_path, record)
    print("exo stand-in %s: node %s, gRPC port %d, API port %d, record %s"
          % (__version__, node_id, record["ports"]["node"], record["ports"]["api"], record_path), flush=True)

    stop = threading.Event()
    threading.Thread(target=serve_grpc_port, args=(grpc_sock, stop), daemon=True).start()
    api_thread = threading.Thread(target=api.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True)
    api_thread.start()

    def on_signal(signum, _frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop.wait(1.0):
        pass
    api.shutdown()
    api.server_close()
    grpc_sock.close()
    if udp_sock:
        udp_sock.close()
    return 0


def run():
    sys.exit(main())


if __name__ == "__main__":
    run()
