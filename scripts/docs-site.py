# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the collection's docs site: antsibull-docs writes a page per plugin and role from their own
documentation (the module's DOCUMENTATION, the filters' .yml files, the roles' argument specs), the
Markdown guides of docs/ and the README join them, and Sphinx renders the whole with the theme of
docs.ansible.com, offline.

    .venv/bin/python scripts/docs-site.py [--dest .build/docs-site]     then open DEST/html/index.html

Run it with the project's venv (scripts/bootstrap.sh --tests installs antsibull-docs and Sphinx):
it documents the collection that ansible-doc finds there. A Sphinx warning fails the build, except
references to ansible.builtin's pages and docs.ansible.com's labels, which only resolve online.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import argparse
import os
import re
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
COLLECTION = "gpufleet.exo"
# The guides, in the order of the site's table of contents: (source, page title).
GUIDES = [
    ("README.md", "Overview"),
    ("docs/facts.md", None), ("docs/fleet.md", None), ("docs/fleet-report.md", None),
    ("docs/targeting.md", None), ("docs/driver.md", None), ("docs/node.md", None),
    ("docs/tinygrad.md", None), ("docs/health.md", None), ("docs/layout.md", None),
]
# Labels of docs.ansible.com that the generated pages refer to; only an online build resolves them.
ONLINE_ONLY = re.compile(r"undefined label: '(ansible_collections\.ansible\.builtin\.[a-z_]+"
                         r"|common_return_values|ansible_configuration_settings|action_plugins)'")
CONF = '''# Written by scripts/docs-site.py.
project = "gpufleet.exo"
copyright = "gpufleet.exo contributors"
title = html_short_title = "gpufleet.exo"
extensions = ["sphinx_antsibull_ext", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3
pygments_style = "ansible"
highlight_language = "YAML+Jinja"
html_theme = "sphinx_ansible_theme"
html_show_sphinx = False
html_copy_source = False
html_use_index = False
default_role = "any"
nitpicky = True
'''
# The collection has no public home yet: its pages name the site's own index, not a Galaxy page.
ANTSIBULL_CFG = '''collection_url = {
    gpufleet.exo = "index.html"
}
'''
GUIDES_TOC = '''

.. toctree::
   :maxdepth: 1
   :caption: Guides

'''


def run(argv):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, ".build", "collections"))
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    if proc.returncode != 0:
        sys.exit("docs-site: %s failed:\n%s" % (" ".join(argv[:3]), proc.stdout[-4000:]))
    return proc.stdout


def add_guides(rst):
    """The Markdown guides as pages of their own, listed under the collection's index page."""
    os.makedirs(os.path.join(rst, "guides"))
    names = []
    for source, title in GUIDES:
        name = os.path.splitext(os.path.basename(source))[0].lower()
        with open(os.path.join(REPO, source)) as handle:
            text = handle.read()
        if title:
            text = re.sub(r"\A# [^\n]*", "# " + title, text)
        with open(os.path.join(rst, "guides", name + ".md"), "w") as handle:
            handle.write(text)
        names.append("guides/" + name)
    with open(os.path.join(rst, "index.rst"), "a") as handle:
        handle.write(GUIDES_TOC + "".join("   %s\n" % name for name in names))


def build(dest):
    rst, html = os.path.join(dest, "rst"), os.path.join(dest, "html")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(rst)
    os.chmod(rst, 0o755)  # antsibull-docs refuses a destination others can write to
    config = os.path.join(dest, "antsibull-docs.cfg")
    with open(config, "w") as handle:
        handle.write(ANTSIBULL_CFG)
    run([os.path.join(BIN, "antsibull-docs"), "--config-file", config, "collection", "--use-current", "--squash-hierarchy", "--fail-on-error",
         "--dest-dir", rst, COLLECTION])
    add_guides(rst)
    with open(os.path.join(dest, "conf.py"), "w") as handle:
        handle.write(CONF)
    warnings = os.path.join(dest, "warnings.txt")
    run([os.path.join(BIN, "sphinx-build"), "-b", "html", "-q", "-c", dest, "-w", warnings, rst, html])
    with open(warnings) as handle:
        left = [line for line in handle.read().splitlines() if "WARNING" in line and not ONLINE_ONLY.search(line)]
    if left:
        sys.exit("docs-site: Sphinx warns:\n" + "\n".join(left))
    return html


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--dest", default=os.path.join(REPO, ".build", "docs-site"))
    html = build(os.path.abspath(parser.parse_args().dest))
    print("docs-site: %s" % os.path.join(html, "index.html"))


if __name__ == "__main__":
    main()
