# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Archives of real exo and tinygrad at the commits the node role deploys, for the tests.

    python tests/integration/exo_sources.py DIR

Prints {"exo": PATH, "tinygrad": PATH}: DIR/exo-e4238f9ef.tar.gz and DIR/tinygrad-ec120ce6b9ce.tar.gz,
links to the archives in ../shared/vendor/ beside the repository where a machine has them (the
source a fleet without GitHub would be given), else downloaded once from GitHub's tarball service
at the pinned commits.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import shutil
import sys
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENDOR = os.path.join(os.path.dirname(REPO), "shared", "vendor")
# exo e4238f9ef and the tinygrad commit its setup.py pins.
ARCHIVES = {
    "exo": ("exo-e4238f9ef.tar.gz",
            "https://codeload.github.com/exo-explore/exo/tar.gz/e4238f9ef369037252c7542e40ea1a8a625afba7"),
    "tinygrad": ("tinygrad-ec120ce6b9ce.tar.gz",
                 "https://codeload.github.com/tinygrad/tinygrad/tar.gz/ec120ce6b9ce8e4ff4b5692566a683ef240e8bc8"),
}


def archives(directory):
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for name, (filename, url) in ARCHIVES.items():
        path = os.path.join(directory, filename)
        vendored = os.path.join(VENDOR, filename)
        # Links and downloads are made beside the path and moved onto it: tests on several workers may
        # ask for the same directory at once.
        partial = "%s.%d.part" % (path, os.getpid())
        if os.path.isfile(vendored):
            if os.path.realpath(path) != os.path.realpath(vendored):
                os.symlink(vendored, partial)
                os.replace(partial, path)
        elif not os.path.isfile(path):
            try:
                with urllib.request.urlopen(url, timeout=300) as response, open(partial, "wb") as handle:
                    shutil.copyfileobj(response, handle)
            except OSError as error:
                # A clone elsewhere than beside shared/ looks for the archive in GitHub, which a machine
                # of this kind cannot reach: say where it was looked for.
                raise RuntimeError("%s is not in %s (the vendored sources beside the repository), and %s could not "
                                   "be downloaded: %s; run the tests from a clone whose parent directory holds shared/vendor"
                                   % (filename, VENDOR, url, error))
            os.replace(partial, path)
        paths[name] = path
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: exo_sources.py DIR")
    print(json.dumps(archives(sys.argv[1])))
