# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node role matches exo_node_extra_args against exo's flags as exo's parser does (settings.EXO_FLAGS):
the table must be exo's own, read here from the source of the exo the role deploys. When exo's parser
gains or loses a flag, this fails until the table is checked against it."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import re
import tarfile

from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import settings
from tests.integration import exo_sources


def test_the_flag_table_is_exos_parser(tmp_path):
    with tarfile.open(exo_sources.archives(str(tmp_path))["exo"]) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith("/exo/main.py") and m.name.count("/") == 2)
        source = archive.extractfile(member).read().decode()
    declared = re.findall(r'parser\.add_argument\("(--[a-z0-9-]+)"(.*)\)', source)
    flags = set(flag for flag, dummy in declared) | {"--help"}
    # argparse.BooleanOptionalAction adds the --no- form of its flag.
    flags |= set("--no-" + flag[2:] for flag, rest in declared if "BooleanOptionalAction" in rest)
    assert sorted(settings.EXO_FLAGS) == sorted(flags)
    assert set(settings.OWNED_FLAGS) <= flags
