# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write the EXAMPLES of modules, verbatim, as task files a playbook includes:
tests/write_examples.py DIR MODULE...  writes DIR/MODULE.yml for each.

The molecule scenarios run them against real exo (roles/node/molecule/serve)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.helpers import examples  # noqa: E402 - after the repository is on the path


def main(directory, modules):
    os.makedirs(directory, exist_ok=True)
    for name in modules:
        with open(os.path.join(directory, name + ".yml"), "w") as handle:
            handle.write("---\n" + examples("module", name))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
