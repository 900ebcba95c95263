#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write a synthetic model in the exact layout of the repository that an exo model card names.

    scripts/exo-synthetic-model.py [--card llama-3.2-1b] [--seed 0] [--dtype f16|bf16] --out DIR

Tests must never download model weights. For the card llama-3.2-1b, exo e4238f9ef's tinygrad
engine reads the repository unsloth/Llama-3.2-1B-Instruct and builds its model from the parameter
set "1B" of exo/inference/tinygrad/inference.py (it never reads config.json, so no smaller model
can stand in). DIR receives what that repository holds: model.safetensors with Hugging Face's Llama
tensor names and the true shapes (146 tensors, random weights), config.json,
generation_config.json, and a byte-level BPE tokenizer in Llama 3's layout (tokenizer.json,
tokenizer_config.json with a chat template, special_tokens_map.json), then gpufleet-model.json:
the card, the repository and each file's path, size and sha256, what a mirror needs to answer
exo's file-list lookups (/api/models/REPO/tree/main) and to give each file its ETag.

The same seed and options give the same bytes on every machine: weights come from numpy's PCG64
bit stream (whose output numpy keeps stable across versions) through integer arithmetic only. A
weight is the sum of 8 random bytes, centred and scaled to std 0.02 (near-normal, within 4.9
std); norms are 1. The file is written in a stream: the model is never whole in memory.

DIR must be empty or new, or hold a gpufleet-model.json made with the same options: then the files
it lists are checked and only a mismatch is written again. See docs/node.md, "A synthetic model for
tests".
"""

import argparse
import collections
import fcntl
import hashlib
import json
import math
import os
import struct
import sys
import time

import numpy

MANIFEST = "gpufleet-model.json"
# Bumped when the bytes this script writes for the same options change.
FORMAT = 1
STD = 0.02

# exo e4238f9ef, exo/models.py: the repository the tinygrad engine reads for a card. The engine picks
# the parameter set from the model id ("1b" in it gives "1B", TinygradDynamicShardInferenceEngine.
# ensure_shard). Only cards whose repository is one model.safetensors are here.
CARDS = {
    "llama-3.2-1b": {"repo": "unsloth/Llama-3.2-1B-Instruct", "parameters": "1B"},
}

# exo e4238f9ef, exo/inference/tinygrad/inference.py, MODEL_PARAMS[...]["args"]: what exo builds the
# model from. The tests compare this with exo's own source.
PARAMETER_SETS = {
    "1B": {
        "dim": 2048, "n_heads": 32, "n_kv_heads": 8, "n_layers": 16, "norm_eps": 1e-5, "rope_theta": 500000,
        "vocab_size": 128256, "hidden_dim": 8192,
        "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "tie_word_embeddings": True,
    },
}

# safetensors dtype names, with the bit patterns of 1.0 (the norms' weights).
DTYPES = {"f16": "F16", "bf16": "BF16"}
ONE = {"F16": 0x3C00, "BF16": 0x3F80}

Tensor = collections.namedtuple("Tensor", "name shape dtype fill")

# Hugging Face's Llama names (exo's convert_from_huggingface maps them to its own), per layer.
# Shapes are nn.Linear's (out_features, in_features), which tinygrad's load_state_dict checks.
LAYER_TENSORS = (
    ("input_layernorm.weight", lambda p: (p["dim"],), "ones"),
    ("mlp.down_proj.weight", lambda p: (p["dim"], p["hidden_dim"]), "normal"),
    ("mlp.gate_proj.weight", lambda p: (p["hidden_dim"], p["dim"]), "normal"),
    ("mlp.up_proj.weight", lambda p: (p["hidden_dim"], p["dim"]), "normal"),
    ("post_attention_layernorm.weight", lambda p: (p["dim"],), "ones"),
    ("self_attn.k_proj.weight", lambda p: (p["n_kv_heads"] * head_dim(p), p["dim"]), "normal"),
    ("self_attn.o_proj.weight", lambda p: (p["dim"], p["n_heads"] * head_dim(p)), "normal"),
    ("self_attn.q_proj.weight", lambda p: (p["n_heads"] * head_dim(p), p["dim"]), "normal"),
    ("self_attn.v_proj.weight", lambda p: (p["n_kv_heads"] * head_dim(p), p["dim"]), "normal"),
)

# Llama 3's special tokens: ids 128000 to 128255, after the 128000 ordinary ones. The ids not named
# here are <|reserved_special_token_N|>, N counting from 0 over them (128002 is 0, 128011 is 3).
ORDINARY = 128000
NAMED_SPECIALS = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>",
    128006: "<|start_header_id|>", 128007: "<|end_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>",
    128010: "<|python_tag|>",
}
BOS, EOS, PAD = "<|begin_of_text|>", "<|eot_id|>", "<|finetune_right_pad_id|>"
# Llama 3's pre-tokenizer split (tiktoken's cl100k pattern with \p{N}{1,3}).
SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
# Llama 3's chat template, without 3.1's tool and date preamble: exo renders it with
# add_generation_prompt=True and tokenize=False, then encodes the text.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim"
    " + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
# What the files claim to come from: exo's pinned transformers, so that it warns about nothing.
TRANSFORMERS_VERSION = "4.46.3"


class Failure(Exception):
    pass


def head_dim(params):
    return params["dim"] // params["n_heads"]


def tensor_table(parameters="1B", dtype="F16"):
    """The tensors of model.safetensors in file order (sorted by name, as Hugging Face's safetensors
    writes them): Tensor(name, shape, dtype, fill), fill being "normal" or "ones"."""
    params = PARAMETER_SETS[parameters]
    table = [Tensor("model.embed_tokens.weight", (params["vocab_size"], params["dim"]), dtype, "normal"),
             Tensor("model.norm.weight", (params["dim"],), dtype, "ones")]
    for layer in range(params["n_layers"]):
        for suffix, shape, fill in LAYER_TENSORS:
            table.append(Tensor("model.layers.%d.%s" % (layer, suffix), shape(params), dtype, fill))
    if not params["tie_word_embeddings"]:
        # Tied models have no lm_head: exo maps lm_head.weight onto output.weight, which is the
        # embedding itself when tied, so a separate one would overwrite the embedding.
        table.append(Tensor("lm_head.weight", (params["vocab_size"], params["dim"]), dtype, "normal"))
    return sorted(table, key=lambda tensor: tensor.name)


def nbytes(tensor):
    return math.prod(tensor.shape) * 2


def safetensors_header(table):
    """The header block: JSON with __metadata__ and each tensor's dtype, shape and data_offsets,
    padded with spaces to a multiple of 8 as safetensors does, after its 8-byte little-endian length."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for tensor in table:
        header[tensor.name] = {"dtype": tensor.dtype, "shape": list(tensor.shape),
                               "data_offsets": [offset, offset + nbytes(tensor)]}
        offset += nbytes(tensor)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def value_table(dtype, std):
    """Bit patterns of the 2041 values a weight can take, for each sum 0..2040 of 8 random bytes.

    The sum has mean 1020 and variance 8 * (256**2 - 1) / 12; centred and scaled it has the asked
    std. Rounding goes through struct (IEEE round-half-even, the same on every machine)."""
    scale = std / math.sqrt(8 * (256 ** 2 - 1) / 12)
    bits = []
    for total in range(8 * 255 + 1):
        value = (total - 1020) * scale
        if dtype == "F16":
            bits.append(struct.unpack("<H", struct.pack("<e", value))[0])
        else:
            # float32 first, then round-half-even to its upper 16 bits.
            single = struct.unpack("<I", struct.pack("<f", value))[0]
            bits.append((single + 0x7FFF + ((single >> 16) & 1)) >> 16)
    return numpy.array(bits, dtype="<u2")


def tensor_chunks(tensor, seed, std, chunk=1 << 16):
    """The tensor's bytes, in chunks. Each tensor has its own stream, keyed by the seed and its name,
    so that a tensor's bytes do not depend on the table around it."""
    count = math.prod(tensor.shape)
    if tensor.fill == "ones":
        block = numpy.full(min(count, chunk), ONE[tensor.dtype], dtype="<u2").tobytes()
        for start in range(0, count, chunk):
            yield block[:2 * min(chunk, count - start)]
        return
    values = value_table(tensor.dtype, std)
    key = int.from_bytes(hashlib.sha256(tensor.name.encode()).digest()[:16], "little")
    bits = numpy.random.PCG64(numpy.random.SeedSequence([seed, key]))
    # Byte sums of each 64-bit draw by halving (pairs of bytes, of 16-bit and of 32-bit fields):
    # integer operations on whole arrays, in buffers small enough for the CPU's cache.
    low8, low16, low32 = numpy.uint64(0x00FF00FF00FF00FF), numpy.uint64(0x0000FFFF0000FFFF), numpy.uint64(0xFFFFFFFF)
    shift8, shift16, shift32 = numpy.uint64(8), numpy.uint64(16), numpy.uint64(32)
    other = numpy.empty(chunk, numpy.uint64)
    out = numpy.empty(chunk, "<u2")
    for start in range(0, count, chunk):
        size = min(chunk, count - start)
        draw, part, result = bits.random_raw(size), other[:size], out[:size]
        for mask, shift in ((low8, shift8), (low16, shift16)):
            numpy.right_shift(draw, shift, out=part)
            numpy.bitwise_and(part, mask, out=part)
            numpy.bitwise_and(draw, mask, out=draw)
            numpy.add(draw, part, out=draw)
        numpy.right_shift(draw, shift32, out=part)
        numpy.bitwise_and(draw, low32, out=draw)
        numpy.add(draw, part, out=draw)
        numpy.take(values, draw, out=result)
        yield result.tobytes()


def write_safetensors(path, table, seed, std=STD):
    """Write a safetensors file of the table, streaming; returns (size, sha256 hex digest)."""
    digest, size = hashlib.sha256(), 0
    with open(path, "wb") as handle:
        header = safetensors_header(table)
        pieces = [[header]] + [tensor_chunks(tensor, seed, std) for tensor in table]
        for piece in pieces:
            for block in piece:
                handle.write(block)
                digest.update(block)
                size += len(block)
    return size, digest.hexdigest()


def byte_symbols():
    """The byte-level alphabet in id order, as GPT-2 and Llama 3 number it: printable bytes keep
    their own character and come first; the others (controls, space, 0x7F-0xA0, 0xAD) follow in
    byte order, shown as the characters from U+0100 on."""
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    others = [byte for byte in range(256) if byte not in printable]
    return [chr(byte) for byte in printable] + [chr(0x100 + n) for n in range(len(others))]


def bpe_vocabulary():
    """(vocab, merges): 128000 ordinary tokens and the merges that make them.

    Not learned from text (no corpus, and exo needs only ids and a round trip): the 256 byte
    symbols, then every pair of them (65536), then the first pairs followed by each byte symbol
    until there are 128000. Any text encodes, since every byte has a token."""
    symbols = byte_symbols()
    tokens, merges = list(symbols), []
    for left in list(symbols) + [a + b for a in symbols for b in symbols]:
        for right in symbols:
            if len(tokens) == ORDINARY:
                return {token: number for number, token in enumerate(tokens)}, merges
            tokens.append(left + right)
            merges.append(left + " " + right)
    raise AssertionError("unreachable")


def special_tokens():
    """[(id, content)] for ids 128000-128255."""
    reserved = iter(range(256))
    return [(number, NAMED_SPECIALS.get(number) or "<|reserved_special_token_%d|>" % next(reserved))
            for number in range(ORDINARY, ORDINARY + 256)]


def token_flags(content, special=True):
    flags = {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False}
    if special:
        flags["special"] = True
    return flags


def tokenizer_json():
    vocab, merges = bpe_vocabulary()
    bos_id = ORDINARY  # <|begin_of_text|>
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [dict(id=number, **token_flags(content)) for number, content in special_tokens()],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": SPLIT_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ]},
        # <|begin_of_text|> before every encoded text, as Llama 3's tokenizer does.
        "post_processor": {"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                      {"SpecialToken": {"id": BOS, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
             "special_tokens": {BOS: {"id": BOS, "ids": [bos_id], "tokens": [BOS]}}},
        ]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }


def tokenizer_config():
    return {
        "added_tokens_decoder": {str(number): token_flags(content) for number, content in special_tokens()},
        "bos_token": BOS,
        "chat_template": CHAT_TEMPLATE,
        # Llama 3 sets true, which makes transformers' decode drop spaces before punctuation; false
        # keeps decode(encode(text)) == text.
        "clean_up_tokenization_spaces": False,
        "eos_token": EOS,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 131072,
        "pad_token": PAD,
        "padding_side": "left",
        # The fast tokenizer whatever use_fast says: exo's AutoProcessor call passes use_fast=False.
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def special_tokens_map():
    return {"bos_token": token_flags(BOS, False), "eos_token": token_flags(EOS, False),
            "pad_token": token_flags(PAD, False)}


def config(parameters, dtype):
    """config.json with the fields of Llama 3.2 1B's; exo never reads it, transformers does (the
    model type names the tokenizer's family)."""
    params = PARAMETER_SETS[parameters]
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": ORDINARY,
        "eos_token_id": ORDINARY + 9,
        "head_dim": head_dim(params),
        "hidden_act": "silu",
        "hidden_size": params["dim"],
        "initializer_range": STD,
        "intermediate_size": params["hidden_dim"],
        "max_position_embeddings": 131072,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": params["n_heads"],
        "num_hidden_layers": params["n_layers"],
        "num_key_value_heads": params["n_kv_heads"],
        "pad_token_id": ORDINARY + 4,
        "pretraining_tp": 1,
        "rms_norm_eps": params["norm_eps"],
        "rope_scaling": params["rope_scaling"],
        "rope_theta": float(params["rope_theta"]),
        "tie_word_embeddings": params["tie_word_embeddings"],
        "torch_dtype": {"F16": "float16", "BF16": "bfloat16"}[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": params["vocab_size"],
    }


def generation_config():
    return {"bos_token_id": ORDINARY, "do_sample": True, "eos_token_id": [ORDINARY + 1, ORDINARY + 8, ORDINARY + 9],
            "max_length": 131072, "pad_token_id": ORDINARY + 4, "temperature": 0.6, "top_p": 0.9,
            "transformers_version": TRANSFORMERS_VERSION}


def json_bytes(data):
    return (json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def small_files(parameters, dtype):
    """{path: bytes} of every file but the weights."""
    return {
        "config.json": json_bytes(config(parameters, dtype)),
        "generation_config.json": json_bytes(generation_config()),
        "special_tokens_map.json": json_bytes(special_tokens_map()),
        "tokenizer.json": json_bytes(tokenizer_json()),
        "tokenizer_config.json": json_bytes(tokenizer_config()),
    }


def options(card, seed, dtype):
    """What decides the bytes: a directory made with the same is the same model."""
    return {"card": card, "repo": CARDS[card]["repo"], "parameters": CARDS[card]["parameters"],
            "seed": seed, "dtype": DTYPES[dtype], "std": STD, "format": FORMAT}


def file_entry(path, size, sha256):
    return {"path": path, "size": size, "sha256": sha256}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(out):
    try:
        with open(os.path.join(out, MANIFEST)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise Failure("%s: %s is not JSON (%s); remove the directory or choose another" % (out, MANIFEST, error))


def write_manifest(out, made_with, files):
    manifest = dict(made_with, files=sorted(files, key=lambda entry: entry["path"]))
    partial = os.path.join(out, MANIFEST + ".partial")
    with open(partial, "wb") as handle:
        handle.write(json_bytes(manifest))
    os.replace(partial, os.path.join(out, MANIFEST))


def up_to_date(out, entry):
    path = os.path.join(out, entry["path"])
    return (os.path.isfile(path) and os.path.getsize(path) == entry["size"]
            and sha256_of(path) == entry["sha256"])


def prepare(out, made_with):
    """Check DIR; returns the manifest's entries that are already right (path -> entry)."""
    if not os.path.isdir(out):
        if os.path.exists(out):
            raise Failure("%s exists and is not a directory" % out)
        os.makedirs(out)
    manifest = read_manifest(out)
    if manifest is None:
        if os.listdir(out):
            raise Failure("%s is not empty and holds no %s: give an empty or new directory, so that no "
                          "other model is overwritten" % (out, MANIFEST))
        return {}
    found = {key: manifest.get(key) for key in made_with}
    if found != made_with:
        differ = ", ".join("%s %s (asked %s)" % (key, json.dumps(found[key]), json.dumps(made_with[key]))
                           for key in made_with if found[key] != made_with[key])
        raise Failure("%s holds a model made with other options: %s; remove it or choose another directory"
                      % (out, differ))
    return {entry["path"]: entry for entry in manifest.get("files", []) if up_to_date(out, entry)}


def write_model(out, card="llama-3.2-1b", seed=0, dtype="f16", log=lambda text: None):
    """Write the model into out; returns the manifest's file entries. Files already right are kept."""
    # Two writers of one directory at once would write one partial file together: the second waits,
    # then finds the first's files right. The lock is beside the directory, which holds the model only.
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(os.path.abspath(out) + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _write_model(out, card, seed, dtype, log)


def _write_model(out, card, seed, dtype, log):
    made_with = options(card, seed, dtype)
    kept = prepare(out, made_with)
    # The manifest first, with no files: it marks the directory as this script's, so that a run cut
    # short can be run again.
    write_manifest(out, made_with, list(kept.values()))
    entries = []
    for path, data in small_files(made_with["parameters"], made_with["dtype"]).items():
        entry = file_entry(path, len(data), hashlib.sha256(data).hexdigest())
        if kept.get(path) != entry:
            with open(os.path.join(out, path), "wb") as handle:
                handle.write(data)
        entries.append(entry)
    table = tensor_table(made_with["parameters"], made_with["dtype"])
    expected = len(safetensors_header(table)) + sum(nbytes(tensor) for tensor in table)
    weights = kept.get("model.safetensors")
    if weights is None or weights["size"] != expected:
        log("writing %s/model.safetensors: %d tensors, %.2f GB" % (out, len(table), expected / 1e9))
        partial = os.path.join(out, "model.safetensors.partial")
        size, sha256 = write_safetensors(partial, table, seed)
        os.replace(partial, os.path.join(out, "model.safetensors"))
        weights = file_entry("model.safetensors", size, sha256)
    entries.append(weights)
    write_manifest(out, made_with, entries)
    return sorted(entries, key=lambda entry: entry["path"])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", maxsplit=1)[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="known cards: %s\n\n"
               "BF16 on tinygrad's CPU backend goes through exo's fix_bf16, which casts through\n"
               "tinygrad's LLVM backend and so needs llvmlite (exo does not declare it); F16 runs\n"
               "everywhere. The 1B model is about 2.5 GB." % ", ".join(sorted(CARDS)))
    parser.add_argument("--card", default="llama-3.2-1b", help="exo's model id (default %(default)s)")
    parser.add_argument("--out", required=True, help="the directory to write (empty, new, or made by this "
                        "script with the same options)")
    parser.add_argument("--seed", type=int, default=0, help="a non-negative integer (default %(default)s)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="f16",
                        help="16-bit float of the weights (default %(default)s; bf16 is what the real "
                             "repository has)")
    args = parser.parse_args(argv)
    if args.card not in CARDS:
        parser.error("--card %s: this script knows the tinygrad parameter sets of %s only"
                     % (args.card, ", ".join(sorted(CARDS))))
    if args.seed < 0:
        parser.error("--seed %d: give a non-negative integer" % args.seed)
    started = time.monotonic()
    try:
        entries = write_model(args.out, args.card, args.seed, args.dtype,
                              log=lambda text: print("exo-synthetic-model: %s" % text, file=sys.stderr))
    except Failure as failure:
        print("exo-synthetic-model: %s" % failure, file=sys.stderr)
        return 1
    print("exo-synthetic-model: %s holds %s (%s) for card %s: %d files, %d bytes, in %.1f s"
          % (args.out, CARDS[args.card]["repo"], DTYPES[args.dtype], args.card, len(entries),
             sum(entry["size"] for entry in entries), time.monotonic() - started), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
