# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """A fleet lab: simulated GPU hosts reachable over real SSH, each in its own network namespace.

Layout (all names start with the lab's prefix, so that nothing else on the machine is touched)::

    <prefix>c   the controller's namespace: a bridge holding 10.77.0.1/16; Ansible runs in here
    <prefix>N   host N: eth0 (a veth into the bridge) with 10.77.x.y/16, and an sshd with its own
                config, key, PidFile and SetEnv lines that point every session at this host's
                simulated libnvidia-ml (SIMULATED_NVML_CONFIG, LD_LIBRARY_PATH); its sshd runs in a
                private mount namespace where the host's simulated /sys tree is mounted on /sys,
                so the probe reads that host's PCI bus and kernel modules with its default rootfs.

No address is set outside the namespaces the lab creates. Lab.close() (also run when starting
fails) kills the sshd processes it started, deletes its namespaces and its directory.

    with Lab(tmpdir, kinds) as lab:
        lab.ansible(["all", "-m", "ping"])

KINDS maps a kind of host to its simulated hardware; expected(kind) says what device_facts must
report there. The hardware is simulated (tests/simulated); SSH, namespaces and Ansible are real.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid as uuidlib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from tests.simulated import nvml as simnvml  # noqa: E402
from tests.simulated import sysfs as simsysfs  # noqa: E402

BIN = os.path.dirname(sys.executable)
SSHD = "/usr/sbin/sshd"
NETWORK = "10.77"
CONTROLLER_ADDRESS = NETWORK + ".0.1"
# The real H100 host of tests/fixtures/real-h100: name, memory, bus, driver and CUDA versions.
REAL_H100 = dict(name="NVIDIA H100 80GB HBM3", memory_mib=81559, driver_version="580.159.04", cuda_version=13000)
HANG_TIMEOUT = 10.0  # device_facts' default deadline: what the host whose NVML hangs costs


def _bus(i):
    # The real H100 host's GPU sits at 0000:00:06.0; further GPUs follow it.
    return "0000:00:%02x.0" % (0x06 + i)


def _gpu(i, name, memory_mib, cc, **kw):
    return simnvml.gpu(name, memory_mib, uuid="GPU-%08x-0000-4000-8000-%012x" % (0xf1ee7000 + i, i),
                       pci_bus_id=_bus(i), minor=i, cc=cc, **kw)


A100_MIG = dict(current=1, pending=1, devices=[
    dict(uuid="MIG-f1ee7000-0000-4000-8000-000000000001", memory_mib=40192, gi=1, ci=0),
    dict(uuid="MIG-f1ee7000-0000-4000-8000-000000000002", memory_mib=19968, gi=3, ci=0)])

# kind -> (GPUs NVML reports, or None for no libnvidia-ml; write_config options; PCI driver; kernel modules)
KINDS = {
    "h100x4": ([_gpu(i, REAL_H100["name"], REAL_H100["memory_mib"], (9, 0)) for i in range(4)],
               dict(driver_version=REAL_H100["driver_version"], cuda_version=REAL_H100["cuda_version"]),
               "nvidia", ("nvidia",)),
    "rtx3080_3090": ([_gpu(0, "NVIDIA GeForce RTX 3080", 10010, (8, 6)), _gpu(1, "NVIDIA GeForce RTX 3090", 24576, (8, 6))],
                     {}, "nvidia", ("nvidia",)),
    "a100_mig": ([_gpu(0, "NVIDIA A100-SXM4-80GB", 81920, (8, 0), mig=A100_MIG)], {}, "nvidia", ("nvidia",)),
    "unknown_part": ([_gpu(0, "NVIDIA Future GPU 1", 65536, (12, 0))], {}, "nvidia", ("nvidia",)),
    "no_gpu": (None, {}, None, ()),
    "driver_missing": (None, {}, "none", ()),
    "reboot_pending": ([_gpu(0, REAL_H100["name"], REAL_H100["memory_mib"], (9, 0))],
                       dict(init_error="LIB_RM_VERSION_MISMATCH"), "nvidia", ("nvidia",)),
    "nvml_hangs": ([_gpu(0, REAL_H100["name"], REAL_H100["memory_mib"], (9, 0))],
                   dict(hang_in="nvmlDeviceGetName"), "nvidia", ("nvidia",)),
}
ORDER = ("h100x4", "rtx3080_3090", "a100_mig", "unknown_part", "no_gpu", "driver_missing", "reboot_pending",
         "nvml_hangs")


def mix(count, hung=1):
    """count host kinds: every kind at least once when count allows, at most `hung` hosts whose NVML hangs."""
    others = [k for k in ORDER if k != "nvml_hangs"]
    kinds = [others[i % len(others)] for i in range(max(count - hung, 0))]
    return kinds + ["nvml_hangs"] * min(hung, count)


def expected(kind):
    """What device_facts must report on a host of this kind: (nvml status, backend, GPU names, driver_needed)."""
    gpus, config, pci_driver, dummy = KINDS[kind]
    status = {"LIB_RM_VERSION_MISMATCH": "version_mismatch"}.get(config.get("init_error"), "ok")
    if gpus is None:
        status = "library_not_found"
    if config.get("hang_in"):
        status = "timeout"
    names = [g["name"].decode() for g in gpus] if status == "ok" else []
    return dict(status=status, backend="cuda" if names else "cpu", names=names,
                driver_needed=pci_driver is not None and pci_driver != "nvidia")


def pci_gpus(kind):
    """How many NVIDIA GPUs the host's PCI bus holds: those NVML reports, or one without a driver."""
    gpus, dummy, pci_driver, dummy = KINDS[kind]
    return len(gpus) if gpus else int(pci_driver is not None)


def missing_programs():
    return [p for p in ("ip", "ssh", "ssh-keygen", SSHD, "unshare", "mount") if not shutil.which(p)]


def _run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=kw.pop("check", True), **kw)


SSHD_CONFIG = """Port 22
ListenAddress {address}
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/authorized_keys
PidFile {hostdir}/sshd.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 200
MaxSessions 50
LogLevel ERROR
Subsystem sftp internal-sftp
SetEnv {setenv}
"""


class Lab:
    """N simulated hosts over real SSH; see the module's description."""

    def __init__(self, directory, kinds, prefix=None):
        missing = missing_programs()
        if missing:
            raise RuntimeError("the fleet lab needs %s: install iproute2 and openssh-server "
                               "(tests/run.sh does, with apt)" % ", ".join(missing))
        if os.geteuid() != 0:
            raise RuntimeError("the fleet lab creates network namespaces: run it as root")
        self.dir = os.path.abspath(directory)
        self.kinds = list(kinds)
        self.prefix = prefix or "gf" + uuidlib.uuid4().hex[:5]
        self.controller = self.prefix + "c"
        self.hosts = {}  # name -> dict(kind, address, namespace)
        self.namespaces = []
        self.processes = []
        self.lib = simnvml.build()
        self.key = os.path.join(self.dir, "id_ed25519")

    # ---- lifecycle ------------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        os.makedirs(self.dir, exist_ok=True)
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.key])
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(self.dir, "host_key")])
        shutil.copy(self.key + ".pub", os.path.join(self.dir, "authorized_keys"))
        self._netns(self.controller)
        self._ip(self.controller, "link", "add", "br0", "type", "bridge")
        self._ip(self.controller, "addr", "add", CONTROLLER_ADDRESS + "/16", "dev", "br0")
        self._ip(self.controller, "link", "set", "br0", "up")
        for i, kind in enumerate(self.kinds):
            self._add_host(i, kind)
        self._write_inventory()
        self._wait_for_ssh()

    def close(self):
        # Everything in the lab's namespaces is the lab's: sshd, its sessions (which leave sshd's
        # process group) and the controller's ControlPersist masters. SIGTERM first: a session's
        # shell may be inside root's shell start-up (pyenv's rehash holds a lock file that only its
        # exit trap removes); SIGKILL for whatever is left after a grace period.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = self._signal_all(sig)
            deadline = time.monotonic() + 3
            while left and sig == signal.SIGTERM and time.monotonic() < deadline:
                time.sleep(0.1)
                left = self._pids()
        for proc in self.processes:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
        self.processes = []
        for namespace in reversed(self.namespaces):
            _run(["ip", "netns", "delete", namespace], check=False)
        self.namespaces = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def _pids(self):
        return [int(pid) for namespace in self.namespaces
                for pid in _run(["ip", "netns", "pids", namespace], check=False).stdout.split() if pid.isdigit()]

    def _signal_all(self, sig):
        pids = self._pids()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        return pids

    # ---- building -------------------------------------------------------------------------

    def _netns(self, name):
        _run(["ip", "netns", "add", name])
        self.namespaces.append(name)
        self._ip(name, "link", "set", "lo", "up")

    def _ip(self, namespace, *args):
        _run(["ip", "-n", namespace] + list(args))

    def _add_host(self, i, kind):
        name = "gpu%02d-%s" % (i, kind.replace("_", "-"))
        namespace = "%s%d" % (self.prefix, i)
        address = "%s.%d.%d" % (NETWORK, (i + 2) // 250, (i + 2) % 250 + 1)
        hostdir = os.path.join(self.dir, name)
        os.makedirs(hostdir)
        gpus, config, pci_driver, modules = KINDS[kind]
        simsysfs.write_tree(hostdir, pci=[simsysfs.nvidia_gpu(_bus(n), driver=pci_driver) for n in range(pci_gpus(kind))],
                            modules=modules)
        setenv = ["LC_ALL=C.UTF-8"]
        if gpus is not None:
            conf = simnvml.write_config(os.path.join(hostdir, "nvml.conf"), gpus, **config)
            setenv += ["%s=%s" % item for item in sorted(simnvml.environment(self.lib, conf).items())]
        self._netns(namespace)
        veth = "%sv%d" % (self.prefix, i)
        # Created in the host's namespace, one end moved to the controller's: nothing in the root namespace.
        self._ip(namespace, "link", "add", "eth0", "type", "veth", "peer", "name", veth)
        self._ip(namespace, "link", "set", veth, "netns", self.controller)
        self._ip(self.controller, "link", "set", veth, "master", "br0")
        self._ip(self.controller, "link", "set", veth, "up")
        self._ip(namespace, "addr", "add", address + "/16", "dev", "eth0")
        self._ip(namespace, "link", "set", "eth0", "up")
        sshd_config = os.path.join(hostdir, "sshd_config")
        with open(sshd_config, "w") as handle:
            handle.write(SSHD_CONFIG.format(address=address, dir=self.dir, hostdir=hostdir, setenv=" ".join(setenv)))
        # The host's simulated /sys replaces the real one in a mount namespace of its own.
        script = 'mount --bind "$1/sys" /sys && exec %s -D -e -f "$2"' % SSHD
        with open(os.path.join(hostdir, "sshd.log"), "w") as log:
            self.processes.append(subprocess.Popen(  # pylint: disable=consider-using-with  # it outlives this call
                ["ip", "netns", "exec", namespace, "unshare", "--mount", "--propagation", "private",
                 "sh", "-c", script, "sh", hostdir, sshd_config], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True))
        self.hosts[name] = dict(kind=kind, address=address, namespace=namespace, dir=hostdir)

    def _write_inventory(self):
        self.inventory = os.path.join(self.dir, "inventory.ini")
        lines = ["[gpu_hosts]"] + ["%s ansible_host=%s" % (name, host["address"]) for name, host in self.hosts.items()]
        lines += ["", "[gpu_hosts:vars]", "ansible_user=root", "ansible_ssh_private_key_file=%s" % self.key,
                  "ansible_python_interpreter=%s" % sys.executable, ""]
        with open(self.inventory, "w") as handle:
            handle.write("\n".join(lines))

    def _wait_for_ssh(self, timeout=60):
        deadline = time.monotonic() + timeout
        pending = dict(self.hosts)
        while pending:
            for name, host in list(pending.items()):
                proc = self.processes[list(self.hosts).index(name)]
                if proc.poll() is not None:
                    with open(os.path.join(host["dir"], "sshd.log")) as handle:
                        raise RuntimeError("sshd of %s exited with %s: %s" % (name, proc.returncode, handle.read()[-2000:]))
                if os.path.exists(os.path.join(host["dir"], "sshd.pid")):
                    del pending[name]
            if pending and time.monotonic() > deadline:
                raise RuntimeError("sshd did not start within %d s on %s" % (timeout, ", ".join(sorted(pending))))
            time.sleep(0.1)

    # ---- using ----------------------------------------------------------------------------

    def environment(self, **extra):
        """The controller's environment: the lab's inventory and key, a fact cache of its own."""
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_INVENTORY=self.inventory,
                   ANSIBLE_HOST_KEY_CHECKING="False", ANSIBLE_NOCOLOR="1",
                   ANSIBLE_CACHE_PLUGIN_CONNECTION=os.path.join(self.dir, "facts"),
                   ANSIBLE_LOCAL_TEMP=os.path.join(self.dir, "tmp"),
                   ANSIBLE_SSH_CONTROL_PATH_DIR=os.path.join(self.dir, "cp"))
        env.pop("LD_LIBRARY_PATH", None)
        env.pop("SIMULATED_NVML_CONFIG", None)
        env.update(extra)
        return env

    def run(self, argv, env=None, timeout=900, cwd=REPO):
        """Run a command in the controller's namespace: a CompletedProcess with stdout and stderr as text."""
        return subprocess.run(["ip", "netns", "exec", self.controller] + list(argv), cwd=cwd,
                              env=env or self.environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=timeout, check=False)

    def ansible(self, args, env=None, **kw):
        return self.run([os.path.join(BIN, "ansible")] + list(args), env=env, **kw)

    def playbook(self, args, env=None, **kw):
        return self.run([os.path.join(BIN, "ansible-playbook")] + list(args), env=env, **kw)
