# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

__doc__ = """Run by exo's interpreter inside a copy of an exo instance's unit (verify.yml): what exo's own
capability probe reports there, which device tinygrad chose, a computation on it, and what exo's
own download code makes of llama-3.2-1b, placed by the role, when HF_ENDPOINT answers no one
(without the role's answers in its cache, exo would retry for minutes: the deadline is 60 s).

Prints one line of JSON.
"""

import asyncio
import json
import os
import time

from exo.download.new_shard_download import download_shard
from exo.helpers import AsyncCallbackSystem
from exo.models import build_full_shard
from exo.topology.device_capabilities import device_capabilities
from tinygrad import Device, Tensor

capabilities = asyncio.run(device_capabilities())
# Compiles a kernel with the backend's compiler (clang for tinygrad's CPU backend) and runs it.
result = (Tensor([1.0, 2.0, 3.0]) * 2 + 1).tolist()

ENGINE = "TinygradDynamicShardInferenceEngine"
started = time.monotonic()
try:
    where, progress = asyncio.run(asyncio.wait_for(
        download_shard(build_full_shard("llama-3.2-1b", ENGINE), ENGINE, AsyncCallbackSystem()), 60))
    with open(os.path.join(str(where), "model.safetensors"), "rb") as handle:
        header = handle.read(8)
    model = {"path": str(where), "status": progress.status, "files": progress.total_files,
             "bytes": progress.total_bytes, "readable": len(header) == 8}
except Exception as problem:  # the check reports whatever exo raised
    model = {"error": "%s: %s" % (type(problem).__name__, problem)}
model["seconds"] = round(time.monotonic() - started, 1)
print(json.dumps({"device": Device.DEFAULT, "result": result, "capabilities": capabilities.to_dict(),
                  "uid": os.getuid(), "model": model, "hf_endpoint": os.environ.get("HF_ENDPOINT")}, sort_keys=True))
