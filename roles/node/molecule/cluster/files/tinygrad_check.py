# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Run by exo's interpreter inside a copy of an exo instance's unit (verify.yml): what exo's own
capability probe reports there, which device tinygrad chose, and a computation on it.

Prints one line of JSON.
"""

import asyncio
import json
import os

from exo.topology.device_capabilities import device_capabilities
from tinygrad import Device, Tensor

capabilities = asyncio.run(device_capabilities())
# Compiles a kernel with the backend's compiler (clang for tinygrad's CPU backend) and runs it.
result = (Tensor([1.0, 2.0, 3.0]) * 2 + 1).tolist()
print(json.dumps({"device": Device.DEFAULT, "result": result, "capabilities": capabilities.to_dict(),
                  "uid": os.getuid()}, sort_keys=True))
