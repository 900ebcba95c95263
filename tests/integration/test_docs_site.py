# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The docs site (scripts/docs-site.py), built as its documentation says and opened in headless Chromium.

Every module, filter and role of the collection must have its page, every role page every variable
of its argument specs, every Markdown guide of docs/ and the README a page under guides/, and every
link between the site's pages must reach a page that exists and, for a link to a place in a page,
an element of that page's DOM as Chromium builds it. The site stays in .build/docs-site to be read.
"""

import glob
import os
import posixpath
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest
import yaml

from tests.helpers import REPO

SITE = os.path.join(REPO, ".build", "docs-site")
HTML = os.path.join(SITE, "html")


def chromium_dom(path):
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium is not installed; tests/run.sh integration installs it")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", "file://" + path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                          check=True).stdout


class Page(HTMLParser):
    """The links (href of every <a>) and the ids of a page's DOM, and its text."""

    def __init__(self, dom):
        HTMLParser.__init__(self)
        self.links, self.ids, self.text = [], set(), []
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def site():
    """Every page of the site, by its path under html/, as Chromium shows it."""
    proc = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "docs-site.py")], cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert proc.stdout.strip() == "docs-site: %s" % os.path.join(HTML, "index.html")
    pages = sorted(os.path.relpath(p, HTML) for p in glob.glob(os.path.join(HTML, "*.html"))
                   + glob.glob(os.path.join(HTML, "guides", "*.html")))
    return dict((page, Page(chromium_dom(os.path.join(HTML, page)))) for page in pages)


def expected_pages():
    """The page of every plugin and role that the collection's own files document."""
    modules = [os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
               if not p.endswith("__init__.py")]
    filters = [os.path.basename(p)[:-4] for p in glob.glob(os.path.join(REPO, "plugins", "filter", "*.yml"))]
    roles = [p.split(os.sep)[-3] for p in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml"))]
    return sorted(["%s_module.html" % m for m in modules] + ["%s_filter.html" % f for f in filters]
                  + ["%s_role.html" % r for r in roles])


def test_every_plugin_and_role_has_its_page_linked_from_the_index(site):
    wanted = expected_pages()
    # a page per module, per filter (each has its documentation file) and per role
    assert len(wanted) == len(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))) + \
        len(glob.glob(os.path.join(REPO, "plugins", "filter", "*.yml"))) + \
        len(glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")))
    assert [page for page in wanted if page not in site] == []
    index = site["index.html"]
    assert [page for page in wanted if page not in index.links] == []
    assert "Collection version" in "".join(index.text)


def test_every_role_page_lists_every_variable_of_its_argument_specs(site):
    for spec in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        role = spec.split(os.sep)[-3]
        with open(spec) as handle:
            options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
        page = site["%s_role.html" % role]
        missing = [name for name in options if "parameter-main--%s" % name not in page.ids]
        assert options and missing == [], (role, missing)


def test_every_guide_of_docs_and_the_readme_is_a_page(site):
    guides = glob.glob(os.path.join(REPO, "docs", "*.md")) + [os.path.join(REPO, "README.md")]
    for guide in guides:
        name = os.path.splitext(os.path.basename(guide))[0].lower()
        page = site.get("guides/%s.html" % name)
        assert page is not None, guide
        with open(guide) as handle:
            second_heading = re.findall(r"^## (.+)$", handle.read(), re.M)[0]
        assert second_heading.replace("`", "") in "".join(page.text), (guide, second_heading)
    index = site["index.html"]
    assert sorted(set(link for link in index.links if link.startswith("guides/"))) == sorted(
        "guides/%s.html" % os.path.splitext(os.path.basename(g))[0].lower() for g in guides)


def test_every_link_between_the_pages_resolves(site):
    broken = []
    for page, parsed in sorted(site.items()):
        for link in parsed.links:
            if re.match(r"^[a-z]+:", link):
                continue   # the theme's links to ansible.com, and the guides' to the web
            path, _sep, fragment = link.partition("#")
            target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path)) if path else page
            if target in site:
                if fragment and fragment not in site[target].ids:
                    broken.append((page, link))
            elif not os.path.exists(os.path.join(HTML, target)):
                broken.append((page, link))
    assert broken == []


def test_no_page_names_a_home_the_collection_does_not_have(site):
    for page, parsed in site.items():
        assert not [link for link in parsed.links if "galaxy.ansible.com" in link or "github.com/gpufleet" in link], page
