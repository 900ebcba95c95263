# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/layout.md names every file of the collection's code, so that it describes the tree as it is."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DESCRIBED = ("plugins/", "roles/", "playbooks/", "scripts/", "benchmarks/", "meta/", "site.yml")


def named_in_layout():
    """The paths docs/layout.md names in its tables' first column: a path may be followed by bare file
    names of the same directory (`roles/node/templates/instance.env.j2`, `instance.conf.j2`); a
    filter's row names its documentation files in the second column."""
    with open(os.path.join(REPO, "docs", "layout.md")) as handle:
        text = handle.read()
    named = set()
    for first, second in re.findall(r"^\|([^|]*)\|([^|]*)\|", text, re.M):
        directory = ""
        for word in re.findall(r"`([^`]+)`", first):
            path = word if "/" in word else os.path.join(directory, word)
            named.add(path)
            directory = os.path.dirname(path)
        if directory == "plugins/filter":
            named.update(os.path.join(directory, word) for word in re.findall(r"`([^`/]+[.]yml)`", second))
    return named


def tracked():
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout.split()
    return [f for f in files if f.startswith(DESCRIBED) and "/molecule/" not in f
            and os.path.basename(f) != "__init__.py" and os.path.exists(os.path.join(REPO, f))]


@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, ".git")), reason="needs the git work tree")
def test_every_file_of_the_code_is_in_the_layout():
    named = named_in_layout()
    missing = [path for path in tracked() if path not in named]
    assert missing == [], "docs/layout.md does not name: %s" % ", ".join(missing)


def test_every_path_the_layout_names_exists():
    gone = [path for path in named_in_layout() if not path.endswith("/") and "*" not in path
            and not os.path.exists(os.path.join(REPO, path))]
    assert gone == []


def test_the_short_layout_names_every_plugin():
    """docs/layout.md's short table ("In short") names each module, module_utils and plugin_utils file and each
    filter by its name (`gpu_choice`, `_driver_packages`, `node_plan`), so that it follows the tree as the
    page's full tables do."""
    with open(os.path.join(REPO, "docs", "layout.md")) as handle:
        section = handle.read().split("\n## In short\n", 1)[1].split("\n## ", 1)[0]
    said = set(os.path.splitext(os.path.basename(word.rstrip("/")))[0] for word in re.findall(r"`([^`]+)`", section))
    plugins = [os.path.relpath(os.path.join(root, name), REPO)
               for root, _dirs, names in os.walk(os.path.join(REPO, "plugins")) for name in names
               if name.endswith(".py") and name != "__init__.py" or root.endswith("filter") and name.endswith(".yml")]
    assert sorted(p for p in plugins if os.path.splitext(os.path.basename(p))[0] not in said) == []
