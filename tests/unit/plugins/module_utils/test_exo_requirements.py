# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node installs of exo's declared requirements (plugins/module_utils/_exo_requirements.py,
the filter gpufleet.exo.exo_requirements), with the node role's defaults."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpufleet.exo.plugins.filter.exo_requirements import FilterModule
from ansible_collections.gpufleet.exo.plugins.module_utils import _exo_requirements as exo_requirements
from tests.helpers import REPO

with open(os.path.join(REPO, "roles", "node", "defaults", "main.yml")) as _handle:
    DEFAULTS = yaml.safe_load(_handle)
TINYGRAD_GIT = "tinygrad @ git+https://github.com/tinygrad/tinygrad.git@ec120ce6b9ce8e4ff4b5692566a683ef240e8bc8"

# The header of the METADATA that building exo e4238f9ef gives on a host where nvidia-smi runs
# (its setup.py then adds nvidia-ml-py a second time), followed by a description.
EXO_METADATA = """Metadata-Version: 2.4
Name: exo
Version: 0.0.1
License-File: LICENSE
Requires-Dist: aiohttp==3.10.11
Requires-Dist: aiohttp_cors==0.7.0
Requires-Dist: aiofiles==24.1.0
Requires-Dist: grpcio==1.70.0
Requires-Dist: grpcio-tools==1.70.0
Requires-Dist: Jinja2==3.1.4
Requires-Dist: numpy==2.0.0
Requires-Dist: nuitka==2.5.1
Requires-Dist: nvidia-ml-py==12.560.30
Requires-Dist: opencv-python==4.10.0.84
Requires-Dist: pillow==10.4.0
Requires-Dist: prometheus-client==0.20.0
Requires-Dist: protobuf==5.28.1
Requires-Dist: psutil==6.0.0
Requires-Dist: pyamdgpuinfo==2.1.6; platform_system == "Linux"
Requires-Dist: pydantic==2.9.2
Requires-Dist: requests==2.32.3
Requires-Dist: rich==13.7.1
Requires-Dist: scapy==2.6.1
Requires-Dist: tqdm==4.66.4
Requires-Dist: transformers==4.46.3
Requires-Dist: uuid==1.30
Requires-Dist: uvloop==0.21.0
Requires-Dist: %s
Requires-Dist: nvidia-ml-py==12.560.30
Provides-Extra: formatting
Requires-Dist: yapf==0.40.2; extra == "formatting"
Provides-Extra: apple-silicon
Requires-Dist: mlx==0.22.0; extra == "apple-silicon"
Requires-Dist: mlx-lm==0.21.1; extra == "apple-silicon"
Provides-Extra: windows
Requires-Dist: pywin32==308; extra == "windows"
Provides-Extra: nvidia-gpu
Requires-Dist: nvidia-ml-py==12.560.30; extra == "nvidia-gpu"

Requires-Dist: not-a-header==1.0 (this line is in the description)
""" % TINYGRAD_GIT

WANTED = ["aiohttp==3.10.11", "aiohttp_cors==0.7.0", "aiofiles==24.1.0", "grpcio==1.70.0", "Jinja2==3.1.4",
          "numpy==2.0.0", "nvidia-ml-py==12.560.30", "opencv-python-headless==4.10.0.84", "pillow==10.4.0",
          "protobuf==5.28.1", "psutil==6.0.0", 'pyamdgpuinfo==2.1.6; platform_system == "Linux"', "pydantic==2.9.2",
          "requests==2.32.3", "rich==13.7.1", "scapy==2.6.1", "tqdm==4.66.4", "transformers==4.46.3",
          "uvloop==0.21.0"]


# What exo does not declare and a CPU instance needs for BF16 weights (tinygrad's LLVM backend).
ADDED = ["llvmlite==0.44.0"]


def with_defaults(metadata, tinygrad=None):
    return exo_requirements.requirements(metadata, DEFAULTS["exo_node_skip_requirements"],
                                         DEFAULTS["exo_node_replace_requirements"],
                                         DEFAULTS["exo_node_tinygrad_requirement"] if tinygrad is None else tinygrad,
                                         DEFAULTS["exo_node_add_requirements"])


def test_the_defaults_keep_exos_tinygrad_add_llvmlite_and_drop_what_no_module_imports():
    result = with_defaults(EXO_METADATA)
    assert result["errors"] == []
    assert (result["name"], result["version"]) == ("exo", "0.0.1")
    assert result["install"] == WANTED + [TINYGRAD_GIT] + ADDED
    assert result["skipped"] == ["grpcio-tools==1.70.0", "nuitka==2.5.1", "prometheus-client==0.20.0", "uuid==1.30"]
    assert result["replaced"] == ["opencv-python==4.10.0.84"]


def test_a_tinygrad_requirement_replaces_the_git_url():
    result = with_defaults(EXO_METADATA, tinygrad="tinygrad==0.10.0")
    assert result["install"] == WANTED + ADDED + ["tinygrad==0.10.0"]
    assert result["replaced"] == ["opencv-python==4.10.0.84", TINYGRAD_GIT]
    assert not [r for r in result["install"] if "git+" in r]


@pytest.mark.parametrize("tinygrad", ["/srv/wheels/tinygrad-0.10.0-py3-none-any.whl",
                                      "https://mirror.example.net/tinygrad-ec120ce6.tar.gz",
                                      "tinygrad @ file:///srv/tinygrad", "  tinygrad>=0.10  "])
def test_tinygrad_as_a_path_url_or_requirement(tinygrad):
    result = with_defaults(EXO_METADATA, tinygrad=tinygrad)
    assert result["errors"] == []
    assert result["install"][-1] == tinygrad.strip()


def test_names_compare_as_indexes_compare_them():
    result = exo_requirements.requirements(EXO_METADATA, ["Grpcio_Tools", "NUITKA", "jinja2"], {"OpenCV.Python": "opencv-python-headless"})
    assert "grpcio-tools==1.70.0" in result["skipped"] and "nuitka==2.5.1" in result["skipped"]
    assert "Jinja2==3.1.4" in result["skipped"]
    assert "opencv-python-headless==4.10.0.84" in result["install"]


def test_a_requirement_with_extras_and_marker_keeps_them_when_replaced():
    metadata = "Name: x\nVersion: 1\nRequires-Dist: opencv-python[contrib]>=4.10; python_version >= \"3.10\"\n"
    result = exo_requirements.requirements(metadata, [], {"opencv-python": "opencv-python-headless"})
    assert result["install"] == ['opencv-python-headless[contrib]>=4.10; python_version >= "3.10"']


def test_an_added_requirement_that_exo_declares_replaces_exos_pin():
    result = exo_requirements.requirements(EXO_METADATA, add=["numpy==2.1.0", "llvmlite==0.44.0"])
    assert "numpy==2.0.0" in result["replaced"] and "numpy==2.0.0" not in result["install"]
    assert result["install"][-2:] == ["numpy==2.1.0", "llvmlite==0.44.0"]


def test_a_distribution_without_requirements_installs_only_tinygrad_when_asked():
    metadata = "Metadata-Version: 2.1\nName: gpufleet-exo-standin\nVersion: 0.1.0\n"
    assert exo_requirements.requirements(metadata)["install"] == []
    assert exo_requirements.requirements(metadata, tinygrad="tinygrad==0.10.0")["install"] == ["tinygrad==0.10.0"]


def test_without_metadata_only_the_settings_are_checked():
    assert with_defaults(None) == {"name": None, "version": None, "install": [], "skipped": [], "replaced": [],
                                   "errors": []}


@pytest.mark.parametrize("skip, replace, tinygrad, message", [
    (["tinygrad"], {}, "", "must not name tinygrad, which exo imports; give exo_node_tinygrad_requirement"),
    ([], {"tinygrad": "tinygrad-nightly"}, "", "must not name tinygrad"),
    (["nuitka", "grpcio tools"], {}, "", "exo_node_skip_requirements: 'grpcio tools' is not a package name"),
    ([""], {}, "", "exo_node_skip_requirements: '' is not a package name"),
    ([], {"opencv-python": "opencv-python-headless==4.10"}, "",
     "exo_node_replace_requirements: 'opencv-python-headless==4.10' is not a package name"),
    ([], {}, "numpy==2.0.0", "exo_node_tinygrad_requirement 'numpy==2.0.0' names numpy, not tinygrad"),
    ([], {}, "==0.10.0", "exo_node_tinygrad_requirement '==0.10.0' names no package, not tinygrad"),
    ("nuitka", {}, "", "exo_node_skip_requirements must be a list of package names, got 'nuitka'"),
    ([], ["opencv-python"], "", "exo_node_replace_requirements must map package names to package names"),
    ([], {}, 0, "exo_node_tinygrad_requirement must be a string, got 0"),
])
def test_bad_settings_are_named_with_their_value(skip, replace, tinygrad, message):
    result = exo_requirements.requirements(EXO_METADATA, skip, replace, tinygrad)
    assert result["install"] == []
    assert [e for e in result["errors"] if message in e], result["errors"]


@pytest.mark.parametrize("add, message", [
    ("llvmlite==0.44.0", "exo_node_add_requirements must be a list of requirements, got 'llvmlite==0.44.0'"),
    (["==0.44.0"], "exo_node_add_requirements entry '==0.44.0' is not a requirement; give a package name"),
    ([7], "exo_node_add_requirements entry 7 is not a requirement"),
    (["--index-url=http://x"], "entry '--index-url=http://x' is not a requirement"),
    (["/srv/llvmlite.whl"], "entry '/srv/llvmlite.whl' is not a requirement"),
    (["tinygrad==0.10.0"], "must not name tinygrad, which exo declares; give exo_node_tinygrad_requirement"),
    (["Nuitka>=2"], "entry 'Nuitka>=2' names a package exo_node_skip_requirements leaves out"),
])
def test_bad_added_requirements_are_named_with_their_value(add, message):
    result = exo_requirements.requirements(EXO_METADATA, ["nuitka"], {}, "", add)
    assert result["install"] == []
    assert [e for e in result["errors"] if message in e], result["errors"]


@pytest.mark.parametrize("metadata, message", [
    ("", "the METADATA of the installed exo is empty or not text"),
    (b"Name: exo\n", "the METADATA of the installed exo is empty or not text"),
    ("Requires-Dist: numpy\n", "has no Name: header"),
])
def test_what_is_not_a_metadata_file_is_said(metadata, message):
    result = exo_requirements.requirements(metadata)
    assert [e for e in result["errors"] if message in e], result["errors"]


def test_the_filter_is_requirements():
    flt = FilterModule().filters()["exo_requirements"]
    assert flt(EXO_METADATA, DEFAULTS["exo_node_skip_requirements"], DEFAULTS["exo_node_replace_requirements"],
               "tinygrad==0.10.0", DEFAULTS["exo_node_add_requirements"]) == with_defaults(EXO_METADATA, tinygrad="tinygrad==0.10.0")
