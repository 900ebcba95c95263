# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet.exo contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/exo-synthetic-model.py without writing 2.5 GB.

The tensor table is checked against exo e4238f9ef's own source (../shared/vendor/ beside the
repository; skipped where that archive is absent); the writer runs on small test-only tables;
the tokenizer is loaded with the tokenizers package and its chat template rendered with jinja2 the
way transformers renders it. tests/integration/test_exo_synthetic_model_1b.py writes the real model.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

import ast
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import threading

import numpy
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "scripts", "exo-synthetic-model.py")
EXO_ARCHIVE = os.path.join(os.path.dirname(REPO), "shared", "vendor", "exo-e4238f9ef.tar.gz")

_spec = importlib.util.spec_from_file_location("exo_synthetic_model", SCRIPT)
model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model)

# Test-only tables: 90300 values cross a chunk boundary of the writer (65536).
SMALL = [model.Tensor("a.weight", (300, 301), "F16", "normal"), model.Tensor("b.norm.weight", (301,), "F16", "ones")]
SMALL_BF16 = [tensor._replace(dtype="BF16") for tensor in SMALL]
# sha256 of write_safetensors(table, seed=0): the same bytes on every machine and numpy version (seen
# equal with numpy 2.4 and 2.5). They change only with the script's FORMAT, which manifests record.
SMALL_SHA256 = {"F16": "4d36a13fe5f35015ca7d4b27ce1a3871ae9f7fc3edc46bc7b943216287679db9",
                "BF16": "dba27b12ca73e94701861e48ebd4a40c701b7b207593628379d5a03f6324498b"}


def exo_source(path):
    """A file of exo e4238f9ef, read from the vendored archive."""
    if not os.path.isfile(EXO_ARCHIVE):
        pytest.skip("exo's source is not here: %s is absent (CI has ../shared beside the repository)" % EXO_ARCHIVE)
    with tarfile.open(EXO_ARCHIVE) as archive:
        return archive.extractfile("exo/" + path).read().decode()


def module_constant(source, name):
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError("%s not found" % name)


def expected_table(args):
    """Hugging Face's Llama tensors for exo's arguments, written out here independently of the script."""
    dim, hidden, head = args["dim"], args["hidden_dim"], args["dim"] // args["n_heads"]
    q, kv = args["n_heads"] * head, args["n_kv_heads"] * head
    table = {"model.embed_tokens.weight": (args["vocab_size"], dim), "model.norm.weight": (dim,)}
    for layer in range(args["n_layers"]):
        prefix = "model.layers.%d." % layer
        table.update({
            prefix + "input_layernorm.weight": (dim,), prefix + "post_attention_layernorm.weight": (dim,),
            prefix + "self_attn.q_proj.weight": (q, dim), prefix + "self_attn.k_proj.weight": (kv, dim),
            prefix + "self_attn.v_proj.weight": (kv, dim), prefix + "self_attn.o_proj.weight": (dim, q),
            prefix + "mlp.gate_proj.weight": (hidden, dim), prefix + "mlp.up_proj.weight": (hidden, dim),
            prefix + "mlp.down_proj.weight": (dim, hidden),
        })
    if not args.get("tie_word_embeddings"):
        table["lm_head.weight"] = (args["vocab_size"], dim)
    return table


def read_safetensors(path):
    """(header, data) parsed by hand: 8-byte little-endian length, then JSON."""
    with open(path, "rb") as handle:
        blob = handle.read()
    length = struct.unpack("<Q", blob[:8])[0]
    return length, json.loads(blob[8:8 + length]), blob[8 + length:]


def as_float(data, dtype):
    bits = numpy.frombuffer(data, dtype="<u2")
    if dtype == "F16":
        return bits.view("<f2").astype(numpy.float64)
    return (bits.astype("<u4") << 16).view("<f4").astype(numpy.float64)


# ---- the table against exo's source

def test_parameter_set_is_exos():
    params = module_constant(exo_source("exo/inference/tinygrad/inference.py"), "MODEL_PARAMS")
    assert model.PARAMETER_SETS["1B"] == params["1B"]["args"]


def test_card_names_exos_repository_and_parameter_set():
    cards = module_constant(exo_source("exo/models.py"), "model_cards")
    engine = exo_source("exo/inference/tinygrad/inference.py")
    for card, known in model.CARDS.items():
        assert cards[card]["repo"]["TinygradDynamicShardInferenceEngine"] == known["repo"]
        assert cards[card]["layers"] == model.PARAMETER_SETS[known["parameters"]]["n_layers"]
        # exo picks the parameter set from the model id: "1B" if "1b" is in it.
        assert '"%s" if "%s" in shard.model_id.lower()' % (known["parameters"], known["parameters"].lower()) in engine


@pytest.mark.parametrize("dtype", ["F16", "BF16"])
def test_tensor_table_is_what_exo_loads(dtype):
    args = module_constant(exo_source("exo/inference/tinygrad/inference.py"), "MODEL_PARAMS")["1B"]["args"]
    table = model.tensor_table("1B", dtype)
    assert len(table) == 146
    assert {tensor.name: tuple(tensor.shape) for tensor in table} == expected_table(args)
    assert {tensor.dtype for tensor in table} == {dtype}
    assert [tensor.name for tensor in table] == sorted(tensor.name for tensor in table)
    assert {tensor.name for tensor in table if tensor.fill == "ones"} == {
        name for name in expected_table(args) if name.endswith("norm.weight")}


def test_tensor_names_are_those_exo_converts():
    """Every name is one exo's convert_from_huggingface maps; tied embeddings mean no lm_head, which
    exo would map onto output.weight, the embedding itself."""
    source = exo_source("exo/inference/tinygrad/models/llama.py")
    patterns = re.findall(r'"(model\.[^"]+)"', source) + re.findall(r'f"(model\.layers\.\{l\}\.[^"]+)"', source)
    assert '"lm_head.weight": "output.weight"' in source
    assert "self.output.weight = self.tok_embeddings.weight" in source
    spelled = set()
    for pattern in patterns:
        for x in ("q", "k", "v", "o", "gate", "down", "up"):
            spelled.add(pattern.replace("{l}", "N").replace("{x}", x))
    for tensor in model.tensor_table():
        assert re.sub(r"\.[0-9]+\.", ".N.", tensor.name) in spelled, tensor.name


def test_1b_size():
    table = model.tensor_table()
    assert sum(model.nbytes(tensor) for tensor in table) == 2471628800


# ---- the writer, on small tables

def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    sizes = {}
    for name, seed in (("one", 1), ("two", 1), ("three", 2)):
        sizes[name] = model.write_safetensors(str(tmp_path / name), SMALL, seed)
    one, two, three = ((tmp_path / name).read_bytes() for name in ("one", "two", "three"))
    assert one == two
    assert one != three
    assert len(one) == len(three)
    assert sizes["one"] == (len(one), hashlib.sha256(one).hexdigest())


@pytest.mark.parametrize("table", [SMALL, SMALL_BF16], ids=["F16", "BF16"])
def test_bytes_are_fixed_across_machines(tmp_path, table):
    size, sha256 = model.write_safetensors(str(tmp_path / "small"), table, 0)
    assert sha256 == SMALL_SHA256[table[0].dtype]


def test_a_tensor_does_not_depend_on_its_neighbours(tmp_path):
    model.write_safetensors(str(tmp_path / "both"), SMALL, 7)
    model.write_safetensors(str(tmp_path / "alone"), SMALL[:1], 7)
    both, alone = read_safetensors(str(tmp_path / "both")), read_safetensors(str(tmp_path / "alone"))
    start, end = both[1]["a.weight"]["data_offsets"]
    assert both[2][start:end] == alone[2]


@pytest.mark.parametrize("table", [SMALL, SMALL_BF16], ids=["F16", "BF16"])
def test_safetensors_format(tmp_path, table):
    model.write_safetensors(str(tmp_path / "small"), table, 3)
    length, header, data = read_safetensors(str(tmp_path / "small"))
    assert length % 8 == 0
    assert header.pop("__metadata__") == {"format": "pt"}
    assert list(header) == [tensor.name for tensor in table]
    offset = 0
    for tensor in table:
        entry = header[tensor.name]
        assert entry == {"dtype": tensor.dtype, "shape": list(tensor.shape),
                         "data_offsets": [offset, offset + 2 * numpy.prod(tensor.shape)]}
        offset = entry["data_offsets"][1]
    assert len(data) == offset


@pytest.mark.parametrize("table", [SMALL, SMALL_BF16], ids=["F16", "BF16"])
@pytest.mark.parametrize("std", [0.02, 0.5])
def test_values(tmp_path, table, std):
    model.write_safetensors(str(tmp_path / "small"), table, 5, std=std)
    dummy, header, data = read_safetensors(str(tmp_path / "small"))
    weights = as_float(data[slice(*header["a.weight"]["data_offsets"])], table[0].dtype)
    norms = as_float(data[slice(*header["b.norm.weight"]["data_offsets"])], table[1].dtype)
    assert weights.size == 300 * 301
    assert abs(weights.std() / std - 1) < 0.02
    assert abs(weights.mean()) < 0.02 * std
    # Near-normal: about 68 % within one std, nothing beyond 4.9 std (the sum of 8 bytes' range).
    assert abs(numpy.mean(numpy.abs(weights) < std) - 0.683) < 0.01
    assert numpy.abs(weights).max() < 4.9 * std * 1.01
    assert (norms == 1.0).all()


def test_value_table_rounds_to_nearest():
    for dtype in ("F16", "BF16"):
        values = as_float(model.value_table(dtype, 0.02).tobytes(), dtype)
        exact = (numpy.arange(2041) - 1020) * 0.02 / numpy.sqrt(8 * (256 ** 2 - 1) / 12)
        step = numpy.abs(exact) * (2.0 ** -10 if dtype == "F16" else 2.0 ** -7)
        assert (numpy.abs(values - exact) <= step / 2 + 1e-12).all()
        assert values[1020] == 0.0 and (numpy.diff(values) >= 0).all()


# ---- the small files

@pytest.fixture(scope="module")
def files():
    return model.small_files("1B", "F16")


@pytest.fixture(scope="module")
def tokenizer(files, tmp_path_factory):
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path_factory.mktemp("tokenizer") / "tokenizer.json"
    path.write_bytes(files["tokenizer.json"])
    return tokenizers.Tokenizer.from_file(str(path))


def test_special_token_ids(tokenizer, files):
    assert tokenizer.get_vocab_size() == 128256
    ids = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|start_header_id|>": 128006,
           "<|end_header_id|>": 128007, "<|eot_id|>": 128009, "<|reserved_special_token_0|>": 128002,
           "<|reserved_special_token_247|>": 128255}
    assert {token: tokenizer.token_to_id(token) for token in ids} == ids
    assert max(json.loads(files["tokenizer.json"])["model"]["vocab"].values()) == 127999
    config = json.loads(files["tokenizer_config.json"])
    assert config["bos_token"] == "<|begin_of_text|>" and config["eos_token"] == "<|eot_id|>"
    assert config["added_tokens_decoder"]["128009"]["content"] == "<|eot_id|>"
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert json.loads(files["special_tokens_map.json"])["eos_token"]["content"] == "<|eot_id|>"
    assert json.loads(files["config.json"])["eos_token_id"] == 128009


@pytest.mark.parametrize("text", ["Hello, world! It's 2026.", "  two spaces,\ttab\nnewline\r\n",
                                  "héllo wörld — ünïcode: 日本語, emoji 😀, Ελληνικά"])
def test_round_trip(tokenizer, text):
    encoding = tokenizer.encode(text)
    assert encoding.ids[0] == 128000  # <|begin_of_text|> first, as Llama 3's tokenizer adds it
    assert all(number < 128000 for number in encoding.ids[1:])
    assert tokenizer.decode(encoding.ids) == text
    assert tokenizer.decode(encoding.ids, skip_special_tokens=False) == "<|begin_of_text|>" + text


def render_chat(files, messages):
    """As transformers renders chat templates: a sandboxed jinja2 with trim_blocks and lstrip_blocks."""
    import jinja2.sandbox
    config = json.loads(files["tokenizer_config.json"])
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(config["chat_template"]).render(
        messages=messages, add_generation_prompt=True, bos_token=config["bos_token"], eos_token=config["eos_token"])


def test_chat_template(files, tokenizer):
    text = render_chat(files, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi! "}])
    assert text == ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                    "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
                    "<|start_header_id|>assistant<|end_header_id|>\n\n")
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    header = [128006, 128007]  # <|start_header_id|>, <|end_header_id|>
    assert [number for number in ids if number >= 128000] == [128000] + header + [128009] + header + [128009] + header


def test_config_matches_the_parameter_set(files):
    config = json.loads(files["config.json"])
    params = model.PARAMETER_SETS["1B"]
    assert (config["hidden_size"], config["num_attention_heads"], config["num_key_value_heads"],
            config["num_hidden_layers"], config["intermediate_size"], config["vocab_size"]) == (
        params["dim"], params["n_heads"], params["n_kv_heads"], params["n_layers"], params["hidden_dim"],
        params["vocab_size"])
    assert config["model_type"] == "llama" and config["tie_word_embeddings"] is True
    assert config["torch_dtype"] == "float16"
    assert json.loads(model.small_files("1B", "BF16")["config.json"])["torch_dtype"] == "bfloat16"


def test_small_files_are_deterministic(files):
    assert model.small_files("1B", "F16") == files


# ---- write_model on a small table: the manifest and a second run

@pytest.fixture
def small_model(monkeypatch):
    monkeypatch.setattr(model, "tensor_table", lambda parameters, dtype: [t._replace(dtype=dtype) for t in SMALL])


def manifest_of(out):
    with open(os.path.join(out, model.MANIFEST)) as handle:
        return json.load(handle)


def test_manifest_lists_every_file(tmp_path, small_model):
    out = str(tmp_path / "m")
    model.write_model(out, seed=4)
    manifest = manifest_of(out)
    assert {key: manifest[key] for key in ("card", "repo", "seed", "dtype")} == {
        "card": "llama-3.2-1b", "repo": "unsloth/Llama-3.2-1B-Instruct", "seed": 4, "dtype": "F16"}
    assert sorted(entry["path"] for entry in manifest["files"]) == sorted(set(os.listdir(out)) - {model.MANIFEST})
    for entry in manifest["files"]:
        with open(os.path.join(out, entry["path"]), "rb") as handle:
            data = handle.read()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["size"], entry["sha256"])


def test_second_run_keeps_right_files_and_mends_others(tmp_path, small_model):
    out = str(tmp_path / "m")
    model.write_model(out)
    weights = os.path.join(out, "model.safetensors")
    os.utime(weights, (1, 1))
    with open(os.path.join(out, "config.json"), "a") as handle:
        handle.write(" ")
    os.remove(os.path.join(out, "tokenizer.json"))
    before = manifest_of(out)
    model.write_model(out)
    assert os.stat(weights).st_mtime == 1
    assert manifest_of(out) == before
    for path, data in model.small_files("1B", "F16").items():
        with open(os.path.join(out, path), "rb") as handle:
            assert handle.read() == data, path


def test_a_run_cut_short_can_run_again(tmp_path, small_model, monkeypatch):
    out = str(tmp_path / "m")

    def cut(*args, **kwargs):
        raise KeyboardInterrupt
    with monkeypatch.context() as patch:
        patch.setattr(model, "write_safetensors", cut)
        with pytest.raises(KeyboardInterrupt):
            model.write_model(out)
    assert "model.safetensors" not in os.listdir(out)
    model.write_model(out)
    assert "model.safetensors" in [entry["path"] for entry in manifest_of(out)["files"]]


# ---- the command line

def run(*args, cwd=None):
    return subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120, check=False, cwd=cwd)


def test_help():
    proc = run("--help")
    assert proc.returncode == 0
    for text in ("--card", "--out", "--seed", "--dtype", "llama-3.2-1b", "llvmlite"):
        assert text in proc.stdout


def test_unknown_card_is_refused(tmp_path):
    proc = run("--card", "llama-3.1-8b", "--out", str(tmp_path / "m"))
    assert proc.returncode == 2
    assert "--card llama-3.1-8b: this script knows the tinygrad parameter sets of llama-3.2-1b only" in proc.stderr
    assert not os.path.exists(str(tmp_path / "m"))


def test_non_empty_directory_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    proc = run("--out", str(tmp_path))
    assert proc.returncode == 1
    assert "%s is not empty and holds no gpufleet-model.json" % tmp_path in proc.stderr
    assert os.listdir(str(tmp_path)) == ["config.json"]


def test_directory_of_other_options_is_refused(tmp_path):
    manifest = dict(model.options("llama-3.2-1b", 1, "f16"), files=[])
    (tmp_path / model.MANIFEST).write_text(json.dumps(manifest))
    proc = run("--out", str(tmp_path), "--seed", "2", "--dtype", "bf16")
    assert proc.returncode == 1
    assert "holds a model made with other options: seed 1 (asked 2), dtype \"F16\" (asked \"BF16\")" in proc.stderr


# ---- the documentation

def test_documented_command_starts(tmp_path):
    """docs/node.md's command, with --help added: the full run (2.5 GB) is in
    tests/integration/test_exo_synthetic_model_1b.py, verbatim."""
    with open(os.path.join(REPO, "docs", "node.md")) as handle:
        section = handle.read().split("## A synthetic model for tests", 1)[1]
    command = re.search(r"```sh\n(.*?)\n```", section, re.S).group(1)
    assert command.startswith("scripts/exo-synthetic-model.py ")
    proc = run(*(command.split()[1:] + ["--help"]))
    assert proc.returncode == 0, proc.stderr


def test_a_second_writer_of_one_directory_waits_for_the_first_and_keeps_its_files(tmp_path, small_model):
    # The molecule scenarios and the integration tests make the same store side by side.
    out = str(tmp_path / "m")
    second = threading.Thread(target=model.write_model, args=(out,))
    with open(out + ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        second.start()
        second.join(0.5)
        assert second.is_alive() and not os.path.exists(out), "a writer went on while another held the directory"
        # The first writer's own work, under its lock.
        model._write_model(out, "llama-3.2-1b", 0, "f16", lambda text: None)
        weights = os.stat(os.path.join(out, "model.safetensors"))
    second.join(10)
    assert not second.is_alive()
    assert os.stat(os.path.join(out, "model.safetensors")).st_mtime_ns == weights.st_mtime_ns
