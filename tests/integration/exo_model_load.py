# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""exo's own weight loading, run on a model directory without installing exo.

    PYTHON=1 python tests/integration/exo_model_load.py EXO_TREE TINYGRAD_TREE MODEL_DIR

EXO_TREE and TINYGRAD_TREE are unpacked source trees (exo e4238f9ef, tinygrad ec120ce6b9ce). This runs
what exo's build_transformer does for the parameter set "1B" up to the copy into the model: exo's
load() of model.safetensors for a shard, convert_from_huggingface and fix_bf16, then the checks
tinygrad's load_state_dict(strict=False) makes (every tensor known to the model, same shapes), for
the whole model and for two half shards. Tensors stay lazy on tinygrad's disk device: nothing is
computed, so no compiler is needed (PYTHON=1 picks tinygrad's Python device). exo's package
__init__ imports its networking stack; only the modules on the loading path are loaded, from their
files. Prints one JSON line per shard.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import importlib.util
import json
import os
import sys
import types


def load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(exo_tree, tinygrad_tree, model_dir):
    sys.path.insert(0, tinygrad_tree)
    source = os.path.join(exo_tree, "exo")
    for package in ("exo", "exo.inference", "exo.inference.tinygrad", "exo.inference.tinygrad.models",
                    "exo.download", "exo.download.hf"):
        sys.modules[package] = types.ModuleType(package)
        sys.modules[package].__path__ = []
    # What tinygrad_helpers imports besides: DEBUG, and a helper used only for index files.
    sys.modules["exo.helpers"] = types.SimpleNamespace(DEBUG=0)
    sys.modules["exo.download.hf.hf_helpers"] = types.SimpleNamespace(get_allow_patterns=None)
    shard_module = load_file("exo.inference.shard", os.path.join(source, "inference", "shard.py"))
    llama = load_file("exo.inference.tinygrad.models.llama",
                      os.path.join(source, "inference", "tinygrad", "models", "llama.py"))
    helpers = load_file("exo.inference.tinygrad.tinygrad_helpers",
                        os.path.join(source, "inference", "tinygrad", "tinygrad_helpers.py"))
    with open(os.path.join(source, "inference", "tinygrad", "inference.py")) as handle:
        tree = ast.parse(handle.read())
    params = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                  and [getattr(target, "id", None) for target in node.targets] == ["MODEL_PARAMS"])
    args = params["1B"]["args"]

    import tinygrad
    from tinygrad import nn
    from tinygrad.nn.state import get_state_dict
    assert tinygrad.__file__.startswith(tinygrad_tree), tinygrad.__file__
    n_layers = args["n_layers"]
    for start, end in ((0, n_layers - 1), (0, n_layers // 2 - 1), (n_layers // 2, n_layers - 1)):
        shard = shard_module.Shard("llama-3.2-1b", start, end, n_layers)
        weights = helpers.load(os.path.join(model_dir, "model.safetensors"), shard)
        transformer = llama.Transformer(**args, linear=nn.Linear, max_context=8192, jit=True, shard=shard)
        converted = llama.fix_bf16(llama.convert_from_huggingface(weights, transformer, args["n_heads"],
                                                                  args["n_kv_heads"]))
        wanted = get_state_dict(transformer)
        in_shard = {name for name in wanted
                    if not name.startswith("layers.") or start <= int(name.split(".")[1]) <= end}
        print(json.dumps({
            "shard": [start, end],
            "loaded": len(converted),
            "unknown": sorted(set(converted) - set(wanted)),
            # freqs_cis is computed, and output.weight is the embedding when tied.
            "missing": sorted(in_shard - set(converted) - {"freqs_cis", "output.weight"}),
            "tied": transformer.output.weight is transformer.tok_embeddings.weight,
            "shape_mismatches": sorted("%s %s %s" % (name, wanted[name].shape, tensor.shape)
                                       for name, tensor in converted.items()
                                       if name in wanted and wanted[name].shape != tensor.shape),
            "dtypes": sorted({str(tensor.dtype) for tensor in converted.values()}),
        }))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: exo_model_load.py EXO_TREE TINYGRAD_TREE MODEL_DIR")
    sys.exit(main(*sys.argv[1:]))
