# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What AnsiballZ ships to a host for a module of the collection: the files and their sizes.

    .venv/bin/python benchmarks/payload.py [gpufleet.exo.device_facts]

Runs the module once on localhost with ANSIBLE_KEEP_REMOTE_FILES, opens the AnsiballZ wrapper it
left and lists the collection's files in its zip, each as stored and as compressed there. Run it on
two commits to compare payloads.
"""
from __future__ import absolute_import, division, print_function

import argparse
import base64
import glob
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
# Each module with arguments that make it return at once on any host.
ARGS = {"gpufleet.exo.device_facts": "tinygrad=false"}


def payload(module):
    """[(path, bytes, compressed bytes)] of the collection's files, and the wrapper's size in bytes."""
    remote_tmp = tempfile.mkdtemp(prefix="payload-")
    try:
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg"), ANSIBLE_KEEP_REMOTE_FILES="1",
                   ANSIBLE_REMOTE_TMP=remote_tmp)
        subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-m", module, "-a", ARGS.get(module, "")],
                       cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=True)
        wrapper = glob.glob(os.path.join(remote_tmp, "*", "AnsiballZ_%s.py" % module.rsplit(".", 1)[-1]))[0]
        with open(wrapper) as handle:
            text = handle.read()
        data = base64.b64decode(re.search(r"zip_data='([^']*)'", text).group(1))
        files = [(info.filename, info.file_size, info.compress_size) for info in zipfile.ZipFile(io.BytesIO(data)).infolist()
                 if "/gpufleet/" in info.filename]
        return sorted(files), len(text)
    finally:
        shutil.rmtree(remote_tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", nargs="?", default="gpufleet.exo.device_facts")
    options = parser.parse_args()
    files, wrapper = payload(options.module)
    print("%8s  %8s  %s" % ("bytes", "zipped", "file"))
    for path, size, zipped in files:
        print("%8d  %8d  %s" % (size, zipped, path))
    print("%8d  %8d  the collection's %d files" % (sum(f[1] for f in files), sum(f[2] for f in files), len(files)))
    print("%8d  %8s  the AnsiballZ wrapper as sent" % (wrapper, ""))


if __name__ == "__main__":
    sys.exit(main())
