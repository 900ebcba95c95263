# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layers exo gives each node of a ring, as the fleet report computes them (plugins/plugin_utils/fleet/capacity.py).

    python3 split.py LAYERS NODE_ID=MEMORY_MIB...

Prints {node id: [first layer, last layer]} (null for a node without a layer) as JSON. Needs the
built collection on PYTHONPATH.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import sys

from ansible_collections.gpufleet.exo.plugins.plugin_utils.fleet import capacity


def main(argv):
    nodes = [(arg.rsplit("=", 1)[0], int(arg.rsplit("=", 1)[1])) for arg in argv[1:]]
    print(json.dumps(dict((node, list(taken) if taken else None)
                          for node, _own, taken in capacity.assignment(nodes, int(argv[0])))))


if __name__ == "__main__":
    main(sys.argv[1:])
