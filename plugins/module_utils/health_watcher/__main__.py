# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""python -m <package>.health_watcher: the watcher's command (watch.main)."""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import sys

from .watch import main

if __name__ == "__main__":
    sys.exit(main())  # pylint: disable=ansible-bad-function # a command of its own, not a module
