# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """The roles' settings engine (plugins/plugin_utils/role_settings.py) over both roles' real specs.

Each case is a variable, the value as the user gave it (YAML, or the string -e name=value gives) and
what the role reads: the value, or the one line it refuses it with. The other variables keep the
role's defaults. ansible-core's check of the spec (ArgumentSpecValidator, which its
validate_argument_spec runs as a role is called) checks types and choices first: each case also says
what that check does with the value, so that a value is refused by one of the two, never by both.
"""

import copy
import os
import re

import pytest
from ansible.release import __version__ as ansible_version
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpufleet.exo.plugins.filter.node_plan import FilterModule
from ansible_collections.gpufleet.exo.plugins.module_utils.probe.health import VERDICTS
from ansible_collections.gpufleet.exo.plugins.plugin_utils import role_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.driver import settings as driver_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.node import settings as node_settings
from ansible_collections.gpufleet.exo.plugins.plugin_utils.role_settings import show
from tests.helpers import REPO

# The node role's defaults that are templates, as Ansible would fill them in for host h.
NODE = dict(role_settings.defaults("node"), exo_node_id_prefix="h", exo_node_address="10.0.0.1",
            exo_node_cluster_hosts=["h"])
# Each role's reading of its variables: given the variables that differ from the defaults, (values, errors).
READ = {
    "node": lambda given: node_settings.check_settings(dict(NODE, **given)),
    "driver": driver_settings.check_settings,
}
# What each role's Python adds to its spec, and the facts it publishes under its prefix.
ROLES = {"node": (node_settings.RULES, node_settings.PUBLISHED),
         "driver": (driver_settings.RULES, driver_settings.OUTPUTS)}


OLD_CORE = tuple(int(part) for part in ansible_version.split(".")[:2]) < (2, 19)


def core_check(options, given):
    """The errors of ansible-core's check of a spec's options, as validate_argument_spec runs it for a role."""
    errors = ArgumentSpecValidator(copy.deepcopy(options)).validate(
        copy.deepcopy(given), validate_role_argument_spec=True).error_messages
    # ansible-core before 2.19 names a type as "<class 'str'>", later releases as "str".
    return [re.sub(r"of type <class '(\w+)'>", r"of type \1", error) for error in errors]


ACCEPTED = [
    # numbers, as YAML or -e gives them
    ("node", "exo_node_api_port", 52416, 52416),
    ("node", "exo_node_api_port", "52416", 52416),
    ("node", "exo_node_api_port", "52416.0", 52416),
    ("node", "exo_node_api_port", 52416.0, 52416),
    ("node", "exo_node_api_port", " 65535 ", 65535),
    ("node", "exo_node_min_memory_mib", "0", 0),
    ("node", "exo_node_max_exposure", "2.5", 2.5),
    ("node", "exo_node_max_exposure", 0, 0.0),
    ("node", "exo_node_health_max_out_share", "0.25", 0.25),
    ("node", "exo_node_health_reset_per_host_per_hour", "0", 0),
    ("driver", "exo_driver_reboot_timeout", "60", 60),
    # booleans in any spelling Ansible reads
    ("node", "exo_node_mig", "yes", True),
    ("node", "exo_node_mig", "False", False),
    ("node", "exo_node_cpu_affinity", 0, False),
    ("driver", "exo_driver_hold", "no", False),
    # lists: YAML, a JSON list, or a comma-separated string where an entry cannot hold a comma
    ("node", "exo_node_gpus", [0, "GPU-1"], [0, "GPU-1"]),
    ("node", "exo_node_gpus", "0, 2", ["0", "2"]),
    ("node", "exo_node_gpus", "[0, 2]", [0, 2]),
    ("node", "exo_node_gpus", "", []),
    ("node", "exo_node_gpus", 0, [0]),
    ("node", "exo_node_cluster_hosts", "a,b", ["a", "b"]),
    ("node", "exo_node_cpu_packages", "clang,llvm", ["clang", "llvm"]),
    ("node", "exo_node_extra_args", '["--max-parallel-downloads=2"]', ["--max-parallel-downloads=2"]),
    ("driver", "exo_driver_extra_packages", "nvtop, nvidia-settings", ["nvtop", "nvidia-settings"]),
    # mappings: YAML, or the JSON text -e name='{...}' gives
    ("node", "exo_node_extra_env", {"HF_HUB_OFFLINE": "1"}, {"HF_HUB_OFFLINE": "1"}),
    ("node", "exo_node_extra_env", '{"HF_HUB_OFFLINE": "1"}', {"HF_HUB_OFFLINE": "1"}),
    ("node", "exo_node_extra_env", "HF_HUB_OFFLINE=1 DEBUG=2", {"HF_HUB_OFFLINE": "1", "DEBUG": "2"}),
    ("driver", "exo_driver_probe_options", {"timeout": "5"}, {"timeout": 5.0}),
    # strings, paths, choices and patterns
    ("node", "exo_node_data_dir", "/srv/exo", "/srv/exo"),
    ("node", "exo_node_numa_policy", "", ""),
    ("node", "exo_node_gpu_health", "ok", "ok"),
    ("node", "exo_node_python", "python3.12", "python3.12"),
    ("node", "exo_node_python_min_version", "3.11", "3.11"),
    ("node", "exo_node_user", "exo-runner", "exo-runner"),
    ("node", "exo_node_source_path", "", ""),
    # the driver's own kinds
    ("driver", "exo_driver_branch", 580, "580"),
    ("driver", "exo_driver_branch", "", None),
    ("driver", "exo_driver_branch", None, None),
    ("driver", "exo_driver_kernel_module", "auto", "auto"),
    ("driver", "exo_driver_kernel_module", "no", False),
    ("driver", "exo_driver_ubuntu_mirror", None, None),
    ("driver", "exo_driver_ubuntu_mirror", "http://mirror.example.org/ubuntu", "http://mirror.example.org/ubuntu"),
]

# What ansible-core's check of the spec lets through and only the engine refuses: ranges, patterns,
# what core converts without a word (a boolean for a number, a number for a string), lists that must be JSON.
REFUSED = [
    # numbers
    ("node", "exo_node_api_port", True, "exo_node_api_port is true, not a whole number; give one such as 52415"),
    ("node", "exo_node_api_port", 70000, "exo_node_api_port is 70000; it must be from 1 to 65535"),
    ("node", "exo_node_api_port", "70000", 'exo_node_api_port is "70000"; it must be from 1 to 65535'),
    ("node", "exo_node_min_memory_mib", "-1", 'exo_node_min_memory_mib is "-1"; it must be 0 or more'),
    ("node", "exo_node_max_exposure", 11, "exo_node_max_exposure is 11; it must be from 0.0 to 10.0"),
    ("node", "exo_node_max_exposure", True, "exo_node_max_exposure is true, not a number; give one such as 2.0"),
    ("node", "exo_node_health_max_out_share", 0, "exo_node_health_max_out_share is 0; it must be from 0.01 to 1.0"),
    ("node", "exo_node_health_max_out_share", 1.5, "exo_node_health_max_out_share is 1.5; it must be from 0.01 to 1.0"),
    ("node", "exo_node_health_reset_per_gpu_per_hour", -1,
     "exo_node_health_reset_per_gpu_per_hour is -1; it must be from 0 to 60"),
    ("driver", "exo_driver_reboot_timeout", 5, "exo_driver_reboot_timeout is 5; it must be from 60 to 86400"),
    # paths the unit files name
    ("node", "exo_node_data_dir", "/var/lib/my exo",
     'exo_node_data_dir is "/var/lib/my exo"; the unit files name it, and systemd would read whitespace, control characters, quotes, '
     "backslashes, '$', '%', ';' or '`' in it differently: choose a path without them"),
    ("node", "exo_node_install_dir", "/opt/exo%i",
     'exo_node_install_dir is "/opt/exo%i"; the unit files name it, and systemd would read whitespace, control characters, quotes, '
     "backslashes, '$', '%', ';' or '`' in it differently: choose a path without them"),
    ("node", "exo_node_config_dir", '/etc/"exo"',
     'exo_node_config_dir is "/etc/\\"exo\\""; the unit files name it, and systemd would read whitespace, control characters, quotes, '
     "backslashes, '$', '%', ';' or '`' in it differently: choose a path without them"),
    # a commit that cannot move
    ("node", "exo_node_git_version", "e4238f9ef",
     'exo_node_git_version is "e4238f9ef"; give the full 40-character id of exo\'s commit: a branch or tag can move, '
     "and pip reads a short id as a branch or tag name first"),
    ("node", "exo_node_git_version", "main",
     'exo_node_git_version is "main"; give the full 40-character id of exo\'s commit: a branch or tag can move, '
     "and pip reads a short id as a branch or tag name first"),
    # strings and paths
    ("node", "exo_node_install_dir", "opt/exo", 'exo_node_install_dir is "opt/exo"; give an absolute path'),
    ("node", "exo_node_git_version", 1234567,
     "exo_node_git_version is 1234567; give a string, in quotes: unquoted, YAML reads it as a number"),
    ("node", "exo_node_python_min_version", 3.1,
     "exo_node_python_min_version is 3.1; give a string, in quotes: unquoted, YAML reads it as a number"),
    ("node", "exo_node_pip_extra_args", ["--timeout", "60"], 'exo_node_pip_extra_args is ["--timeout", "60"]; give a string'),
    ("node", "exo_node_numa_policy", None, "exo_node_numa_policy is null; give a string"),
    # patterns
    ("node", "exo_node_python_min_version", "3",
     'exo_node_python_min_version is "3"; give a major.minor release in quotes, such as "3.10"'),
    ("node", "exo_node_python", "python 3",
     'exo_node_python is "python 3"; give an absolute path or a command name such as python3.12'),
    ("node", "exo_node_user", "Exo", 'exo_node_user is "Exo", which is not an account name; use lowercase letters, '
                                     "digits, '_' or '-', starting with a letter or '_'"),
    ("node", "exo_node_id_prefix", "gpu 01", 'exo_node_id_prefix is "gpu 01"; use letters, digits, \'.\', \'_\', '
                                             "'@' or '-', starting with a letter or digit"),
    ("node", "exo_node_address", "", 'exo_node_address is "", which is empty; give the address other nodes reach '
                                     "this host at"),
    ("driver", "exo_driver_debian_mirror", "deb.debian.org",
     'exo_driver_debian_mirror is "deb.debian.org", which is not a URL; give one such as http://deb.debian.org/debian'),
    ("driver", "exo_driver_ubuntu_security_mirror", "security",
     'exo_driver_ubuntu_security_mirror is "security", which is not a URL; give one such as '
     "http://security.ubuntu.com/ubuntu"),
    ("driver", "exo_driver_cuda_repo_key", "keys/D42D0685.pub", 'exo_driver_cuda_repo_key is "keys/D42D0685.pub"; '
                                                                "give a file name under the repository URL, such as "
                                                                "D42D0685.pub"),
    # lists and their entries
    ("node", "exo_node_gpus", "[0, 2", 'exo_node_gpus is "[0, 2", which is not a JSON list; give a list, for example '
                                       "-e '{\"exo_node_gpus\": [0, 2]}'"),
    ("node", "exo_node_extra_args", "--x=1", 'exo_node_extra_args is the string "--x=1"; give a list, for example '
                                             "-e '{\"exo_node_extra_args\": [\"...\"]}'"),
    ("node", "exo_node_cpu_packages", [5],
     "exo_node_cpu_packages entry is 5; give a string, in quotes: unquoted, YAML reads it as a number"),
    # the driver's own kinds
    ("driver", "exo_driver_kernel_module", "sometimes", 'exo_driver_kernel_module is "sometimes"; give auto, true or false'),
    ("driver", "exo_driver_branch", "535.129.03",
     'exo_driver_branch is "535.129.03", a driver version; give its branch, the first number: 535'),
    ("driver", "exo_driver_probe_options", "rootfs=/srv",
     'exo_driver_probe_options is "rootfs=/srv"; give a mapping of gpufleet.exo.device_facts options, for example '
     "-e '{\"exo_driver_probe_options\": {\"tinygrad\": false}}'"),
]

# What ansible-core's check of the spec refuses as the role is called, before any task: (role, variable, value,
# the start of core's message, and the engine's where core's check did not run). The engine cannot read such a
# value either (CoreRefused): called as a role, its message never comes second.
CORE_REFUSED = [
    # numbers
    ("node", "exo_node_api_port", "abc", "argument 'exo_node_api_port' is of type str and we were unable to convert "
                                         "to int", 'exo_node_api_port is "abc", not a whole number; give one such as 52415'),
    ("node", "exo_node_api_port", None, "argument 'exo_node_api_port' is of type NoneType and we were unable to "
                                        "convert to int", "exo_node_api_port is null, not a whole number; give one such "
                                                          "as 52415"),
    ("node", "exo_node_api_port", "52415.5", "argument 'exo_node_api_port' is of type str and we were unable to convert "
                                             "to int", 'exo_node_api_port is "52415.5", not a whole number; give one '
                                                       "such as 52415"),
    ("node", "exo_node_max_exposure", "high", "argument 'exo_node_max_exposure' is of type str and we were unable to "
                                              "convert to float", 'exo_node_max_exposure is "high", not a number; give '
                                                                  "one such as 2.0"),
    ("driver", "exo_driver_min_free_mib", "lots", "argument 'exo_driver_min_free_mib' is of type str and we were unable "
                                                  "to convert to int", 'exo_driver_min_free_mib is "lots", not a whole '
                                                                       "number; give one such as 1536"),
    # booleans
    ("node", "exo_node_mig", "maybe", "argument 'exo_node_mig' is of type str and we were unable to convert to bool",
     'exo_node_mig is "maybe"; give true or false'),
    ("driver", "exo_driver_reboot", [], "argument 'exo_driver_reboot' is of type list and we were unable to convert to "
                                        "bool", "exo_driver_reboot is []; give true or false"),
    # lists and mappings
    ("node", "exo_node_gpus", {"a": 1}, "argument 'exo_node_gpus' is of type dict and we were unable to convert to list",
     'exo_node_gpus is {"a": 1}; give a list'),
    ("node", "exo_node_extra_env", "HF_HUB_OFFLINE", "argument 'exo_node_extra_env' is of type str and we were unable "
                                                     "to convert to dict",
     'exo_node_extra_env is "HF_HUB_OFFLINE"; give a mapping of names to values, for example '
     "-e '{\"exo_node_extra_env\": {\"NAME\": \"value\"}}'"),
    ("node", "exo_node_probe_options", [], "argument 'exo_node_probe_options' is of type list and we were unable to "
                                           "convert to dict",
     "exo_node_probe_options is []; give a mapping of names to values, for example "
     "-e '{\"exo_node_probe_options\": {\"NAME\": \"value\"}}'"),
    # choices
    ("node", "exo_node_gpu_health", "bad", "value of exo_node_gpu_health must be one of: ok, degraded, unusable, got: "
                                           "bad",
     'exo_node_gpu_health is "bad"; choose one of "ok", "degraded", "unusable"'),
    ("node", "exo_node_refresh_facts", "sometimes", "value of exo_node_refresh_facts must be one of: auto, always, "
                                                    "never, got: sometimes",
     'exo_node_refresh_facts is "sometimes"; choose one of "auto", "always", "never"'),
    ("node", "exo_node_numa_policy", "none", "value of exo_node_numa_policy must be one of: , preferred, bind, "
                                             "interleave, got: none",
     'exo_node_numa_policy is "none"; choose one of "", "preferred", "bind", "interleave"'),
    ("node", "exo_node_discovery", "mdns", "value of exo_node_discovery must be one of: manual, udp, got: mdns",
     'exo_node_discovery is "mdns"; choose one of "manual", "udp"'),
    ("driver", "exo_driver_flavor", "Full", "value of exo_driver_flavor must be one of: compute, full, got: Full",
     'exo_driver_flavor is "Full"; choose one of "compute", "full"'),
]

UNKNOWN = [
    ("node", "exo_node_gpu", [0], "exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?); "
                                  "docs/node.md lists them"),
    ("node", "exo_node_api_prot", 8000, "exo_node_api_prot is not a variable of this role (did you mean "
                                        "exo_node_api_port?); docs/node.md lists them"),
    ("node", "exo_node_zzz", 1, "exo_node_zzz is not a variable of this role; docs/node.md lists them"),
    ("driver", "exo_driver_brnach", "535", "exo_driver_brnach is not a variable of this role (did you mean "
                                           "exo_driver_branch?); docs/driver.md lists them"),
    ("driver", "exo_driver_rebot", True, "exo_driver_rebot is not a variable of this role (did you mean "
                                         "exo_driver_reboot?); docs/driver.md lists them"),
]

# Not settings of the role that reads them: what it publishes, and the other role's variables.
IGNORED = [
    ("node", "exo_node_instances", [{"name": "cpu"}]),
    ("node", "exo_node_cpu_reason", None),
    ("node", "exo_driver_brnach", "535"),
    ("driver", "exo_driver_decision", {"action": "none"}),
    ("driver", "exo_driver_reboot_hosts", {}),
    ("driver", "exo_node_gpu", [0]),
]


@pytest.mark.parametrize("role, name, given, value", ACCEPTED)
def test_a_value_as_given_is_read_as_the_role_means_it(role, name, given, value):
    assert core_check(role_settings.options(role), {name: given}) == []
    values, errors = READ[role]({name: given})
    assert errors == []
    assert values[name] == value and type(values[name]) is type(value)


@pytest.mark.parametrize("role, name, given, message", REFUSED)
def test_a_bad_value_is_refused_in_one_line_with_the_variable_the_value_and_what_to_do(role, name, given, message):
    # ansible-core's check lets it through: the engine's line is the only one the user sees. Before 2.19
    # core refuses null for a string itself, and then its line is the only one.
    assert core_check(role_settings.options(role), {name: given}) == [] or (given is None and OLD_CORE)
    values, errors = READ[role]({name: given})
    assert errors == [message]
    assert name not in values
    # A bad entry of a list is shown alone.
    assert "\n" not in message and message.startswith(name + " ")
    assert show(given) in message or any(" entry is %s;" % show(entry) in message for entry in given)


@pytest.mark.parametrize("role, name, given, core, engine", CORE_REFUSED)
def test_a_wrong_type_or_choice_is_refused_by_ansible_cores_check_first(role, name, given, core, engine):
    errors = core_check(role_settings.options(role), {name: given})
    assert len(errors) == 1 and errors[0].startswith(core), errors
    # Unreachable after core's check; where that check did not run, one line as for the engine's own.
    values, engine_errors = READ[role]({name: given})
    assert engine_errors == [engine] and name not in values
    with pytest.raises(role_settings.CoreRefused):
        role_settings.read(name, given, role_settings.options(role)[name], ROLES[role][0].get(name, {}))


# Every kind of value, as YAML or -e gives it, against every type the spec may give a variable.
VALUES = ["abc", "", " ", "8000", " 8000 ", "8000.0", "8000.5", "1e3", "-1", "nan", "yes", "maybe", "0,2", "[0, 2]",
          "[0, 2", '{"A": "b"}', "{'A': 'b'}", "{A", "A=b", "A=b C=d", 0, 1, 2, -1, 8000, 8000.0, 8000.5, True, False,
          None, [], [0], ["a"], [None], [[0]], ["yes", "no"], {}, {"a": 1}]
TYPES = ([{"type": kind} for kind in ("int", "float", "bool", "str", "path", "dict", "list", "raw")]
         + [{"type": "list", "elements": kind} for kind in ("str", "path", "int", "float", "bool", "dict", "raw")]
         + [{"type": "str", "choices": ["", "abc", "yes"]}, {"type": "int", "choices": [0, 8000]},
            {"type": "list", "elements": "str", "choices": ["a", "0", "2"]}])


@pytest.mark.parametrize("default", [None, "set"])
@pytest.mark.parametrize("option", TYPES, ids=lambda option: "-".join(str(value) for value in option.values()))
def test_the_engine_refuses_a_type_or_choice_only_where_ansible_cores_check_refuses_it(option, default):
    # So that the engine's message never follows core's: it converts with core's converters.
    option = dict(option, default=default)
    wrong = []
    for given in VALUES:
        try:
            role_settings.read("x", given, option, {})
            refused = False
        except role_settings.CoreRefused:
            refused = True
        except role_settings.SettingError:
            refused = False
        if refused and not core_check({"x": option}, {"x": given}):
            wrong.append(given)
    assert wrong == []


@pytest.mark.parametrize("role, name, given, message", UNKNOWN)
def test_an_unknown_name_is_refused_with_the_nearest_one(role, name, given, message):
    assert READ[role]({name: given})[1] == [message]


@pytest.mark.parametrize("role, name, given", IGNORED)
def test_published_facts_and_the_other_roles_variables_are_not_settings(role, name, given):
    values, errors = READ[role]({name: given})
    assert errors == [] and name not in values


# The spec's own features that no variable of the roles uses yet: elements of other types, and
# choices of a list, which apply to each entry.
OPTIONS = [
    ({"type": "list", "elements": "int"}, {"range": (0, 7)}, "1, 3", [1, 3]),
    ({"type": "list", "elements": "int"}, {"range": (0, 7)}, "1, 9", 'x entry is "9"; it must be from 0 to 7'),
    ({"type": "list", "elements": "str", "choices": ["cuda", "nv"]}, {}, "nv,cuda", ["nv", "cuda"]),
    ({"type": "list", "elements": "str", "choices": ["cuda", "nv"]}, {}, ["cuda", "vulkan"],
     'x entry is "vulkan"; choose one of "cuda", "nv"'),
    ({"type": "list", "elements": "bool"}, {}, "yes,no", [True, False]),
    ({"type": "list"}, {}, [None, {"a": 1}], [None, {"a": 1}]),
    ({"type": "raw"}, {}, {"any": ["thing"]}, {"any": ["thing"]}),
    ({"type": "int", "default": None}, {}, None, None),
    ({"type": "int", "default": 3}, {}, None, "x is null, not a whole number; give one such as 3"),
    ({"type": "float"}, {"range": (None, 1.5)}, "2", 'x is "2"; it must be 1.5 or less'),
]


@pytest.mark.parametrize("option, rule, given, expected", OPTIONS)
def test_each_type_of_the_spec(option, rule, given, expected):
    try:
        assert role_settings.read("x", given, option, rule) == expected
    except role_settings.SettingError as problem:
        assert str(problem) == expected


def test_ansible_cores_check_refuses_a_list_entry_outside_the_choices_first():
    option = {"type": "list", "elements": "str", "choices": ["cuda", "nv"]}
    assert core_check({"x": option}, {"x": "nv,cuda"}) == []
    assert core_check({"x": option}, {"x": ["cuda", "vulkan"]}) == [
        "value of x must be one or more of: cuda, nv. Got no match for: vulkan"]


def test_a_variable_left_out_takes_the_specs_default_unless_only_ansible_can_fill_it_in():
    assert driver_settings.check_settings({}) == (role_settings.defaults("driver"), [])
    values, errors = node_settings.check_settings(dict((n, v) for n, v in NODE.items() if n != "exo_node_id_prefix"))
    assert errors == ["exo_node_id_prefix is not set, and its default is a template of the host's variables that "
                      'only the role fills in ("{{ inventory_hostname }}"); give it, or include the role']
    left_out = dict((n, v) for n, v in NODE.items() if n != "exo_node_api_port")
    assert node_settings.check_settings(left_out) == ({**node_settings.check_settings(NODE)[0], "exo_node_api_port": 52415}, [])


def test_one_message_per_bad_variable_in_the_specs_order_then_the_unknown_names():
    errors = READ["driver"]({"exo_driver_rebot": 1, "exo_driver_reboot": "often", "exo_driver_flavor": "all"})[1]
    assert [error.split(" ")[0] for error in errors] == ["exo_driver_flavor", "exo_driver_reboot", "exo_driver_rebot"]


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_rule_names_an_option_of_the_spec_and_no_published_fact_is_one(role):
    rules, published = ROLES[role]
    options = role_settings.options(role)
    assert sorted(set(rules) - set(options)) == []
    assert sorted(set(published) & set(options)) == []
    assert all(set(rule) <= {"range", "match", "split", "read"} for rule in rules.values())


@pytest.mark.parametrize("role", sorted(ROLES))
def test_the_published_facts_are_those_the_roles_tasks_set(role):
    set_facts = set()
    tasks = os.path.join(REPO, "roles", role, "tasks")
    for name in os.listdir(tasks):
        with open(os.path.join(tasks, name)) as handle:
            for task in yaml.safe_load(handle) or []:
                for each in [task] + task.get("block", []):
                    set_facts.update(each.get("ansible.builtin.set_fact") or {})
    assert sorted(n for n in set_facts if re.match("exo_%s_" % role, n)) == sorted(ROLES[role][1])


def test_the_spec_is_read_once_and_defaults_are_copies():
    assert role_settings.options("node") is role_settings.options("node")
    role_settings.defaults("node")["exo_node_gpus"].append(0)
    assert role_settings.defaults("node")["exo_node_gpus"] == []


def test_the_health_choices_are_the_probes_verdicts():
    assert role_settings.options("node")["exo_node_gpu_health"]["choices"] == list(VERDICTS)


def test_the_filter_names_the_host_on_each_line():
    node_settings_filter = FilterModule().filters()["node_settings"]
    assert node_settings_filter(NODE, "gpu7") == {"settings": node_settings.check_settings(NODE)[0], "errors": []}
    assert node_settings_filter(dict(NODE, exo_node_gpu=[0], exo_node_api_port="abc"), "gpu7") == {
        "settings": None, "errors": [
            'host gpu7: exo_node_api_port is "abc", not a whole number; give one such as 52415',
            "host gpu7: exo_node_gpu is not a variable of this role (did you mean exo_node_gpus?); docs/node.md lists "
            "them"]}


# $EXO_NODE_ARGS is split and unquoted by systemd when exo starts (ExecStart=... $EXO_NODE_ARGS).
# A '$' in it is never expanded: exo would get "$HOME" where the operator meant a path.
@pytest.mark.parametrize("arg", ['--x="1"', "--x='a'", "--path=C:\\\\x", '--q="', "--system-prompt=$HOME"])
def test_an_extra_argument_that_systemd_would_unquote_is_refused(arg):
    values, errors = READ["node"]({"exo_node_extra_args": [arg]})
    assert errors == ["exo_node_extra_args entry %s holds quotes, backslashes or '$', which systemd takes as quoting "
                      "when it splits the arguments (and never expands), so exo would not receive it as written; "
                      "leave them out" % show(arg)]


def test_an_extra_argument_with_a_percent_reaches_exo_as_written():
    assert READ["node"]({"exo_node_extra_args": ["--system-prompt=100%i"]})[1] == []
