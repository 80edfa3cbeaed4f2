"""LoRA fixtures for test/lora: tiny random models, adapters attached by peft with non-zero A and B
(init_lora_weights=False), saved with save_pretrained, and peft's own merge_and_unload() of the same
base saved beside them (truth/<case>.safetensors: the base's tensor names only). One call builds all.
Usage: python3 lora_fixtures.py OUT_DIR  ->  prints JSON {case: {base, adapter, truth}}"""
import contextlib, copy, json, os, sys, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
import numpy as np
import torch
from torch import nn
from safetensors.torch import save_file, load_file
from transformers import GPT2Config, GPT2LMHeadModel, BertConfig, BertModel
from transformers.utils import logging as hf_logging
from peft import LoraConfig, IA3Config, get_peft_model
from peft.tuners.lora import LoraLayer

hf_logging.set_verbosity_error()
out = sys.argv[1]
report = {}


class Cnn(nn.Module):
    """An Embedding, Conv1d (k=3), Conv2d 1x1 and 3x3, and a Linear."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.conv1d = nn.Conv1d(6, 5, 3)
        self.pw = nn.Conv2d(3, 4, 1)
        self.conv = nn.Conv2d(4, 6, 3)
        self.fc = nn.Linear(6, 7)

    def forward(self, x):
        return self.fc(self.conv(self.pw(x)).mean((2, 3)))


def gpt2():
    return GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16))


def bert():
    return BertModel(BertConfig(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24, vocab_size=40, max_position_embeddings=16))


def case(name, make, config, dtype=torch.float32, scale=None, run=None):
    """Base saved, adapter attached and saved, merged by peft and saved (truth). With `run` (an input),
    the base is also exported to ONNX (TorchScript exporter) and peft's merged model's output on the
    input saved: what a runtime given the merged weights must predict."""
    torch.manual_seed(len(report) + 1)
    model = make().to(dtype).eval()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    if run is not None:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
            torch.onnx.export(model, (run,), os.path.join(d, "base.onnx"), input_names=["x"], output_names=["y"], dynamo=False, do_constant_folding=False)
    base_sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    if hasattr(model, "save_pretrained"):
        model.save_pretrained(os.path.join(d, "base"))
        base = os.path.join(d, "base", "model.safetensors")
    else:
        base = os.path.join(d, "base.safetensors")
        save_file(base_sd, base)
    names = list(load_file(base).keys())
    peft_model = get_peft_model(model, config)
    with torch.no_grad():  # modules_to_save as if trained: their copies differ from the base
        for n, p in peft_model.named_parameters():
            if ".modules_to_save." in n:
                p.add_(torch.randn_like(p) * 0.1)
    peft_model.save_pretrained(os.path.join(d, "adapter"))
    entry = {"base": base, "adapter": os.path.join(d, "adapter")}
    if scale is not None:
        scaled = copy.deepcopy(peft_model)
        # Every layer's scaling (peft's scale_layer skips embeddings, which have no lora_A).
        for m in scaled.modules():
            if isinstance(m, LoraLayer):
                for a in m.scaling:
                    m.scaling[a] *= scale
        sd = scaled.merge_and_unload().state_dict()
        save_file({k: sd[k].detach().clone().contiguous() for k in names}, os.path.join(d, "truth-scaled.safetensors"))
        entry["truthScaled"] = os.path.join(d, "truth-scaled.safetensors")
    if config.peft_type == "LORA" and not config.use_dora:
        merged = peft_model.merge_and_unload()
        sd = merged.state_dict()
        save_file({k: sd[k].detach().clone().contiguous() for k in names}, os.path.join(d, "truth.safetensors"))
        entry["truth"] = os.path.join(d, "truth.safetensors")
        if run is not None:
            with torch.no_grad():
                y = merged(run)
            np.save(os.path.join(d, "x.npy"), run.numpy())
            np.save(os.path.join(d, "y.npy"), y.numpy())
            entry.update(onnx=os.path.join(d, "base.onnx"), x=os.path.join(d, "x.npy"), y=os.path.join(d, "y.npy"))
    report[name] = entry


gpt2_targets = ["c_attn", "c_proj", "c_fc", "wte"]
case(
    "gpt2",
    gpt2,
    LoraConfig(r=4, lora_alpha=8, target_modules=gpt2_targets, fan_in_fan_out=True, init_lora_weights=False,
               rank_pattern={"h.1.attn.c_attn": 2}, alpha_pattern={"c_fc": 3}, modules_to_save=["ln_f"]),
)
case("gpt2-f16", gpt2, LoraConfig(r=4, lora_alpha=8, target_modules=gpt2_targets, fan_in_fan_out=True, init_lora_weights=False), torch.float16)
case("gpt2-bf16", gpt2, LoraConfig(r=4, lora_alpha=8, target_modules=gpt2_targets, fan_in_fan_out=True, init_lora_weights=False), torch.bfloat16)
case("bert-rslora", bert, LoraConfig(r=4, lora_alpha=6, use_rslora=True, target_modules=["query", "value", "dense", "word_embeddings"], init_lora_weights=False))
cnn_targets = ["emb", "conv1d", "pw", "conv", "fc"]
case("cnn", Cnn, LoraConfig(r=3, lora_alpha=5, target_modules=cnn_targets, init_lora_weights=False), scale=0.5, run=torch.randn(2, 3, 7, 6))
case("cnn-f16", Cnn, LoraConfig(r=3, lora_alpha=5, target_modules=cnn_targets, init_lora_weights=False), torch.float16)
case("cnn-bf16", Cnn, LoraConfig(r=3, lora_alpha=5, target_modules=cnn_targets, init_lora_weights=False), torch.bfloat16)
case("cnn-dora", Cnn, LoraConfig(r=3, lora_alpha=5, target_modules=["pw", "fc"], use_dora=True, init_lora_weights=False))
case("cnn-ia3", Cnn, IA3Config(target_modules=["pw", "fc"], feedforward_modules=["fc"]))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.fc = nn.Linear(6, 7)


def cancel_case(name, dtype):
    """A base whose adapted weights are minus their deltas, rounded to the dtype: peft rounds an
    Embedding's delta to the dtype before adding (the merge is exactly zero), a Linear's not (the
    merge is what the rounding left)."""
    torch.manual_seed(99)
    peft_model = get_peft_model(Tiny().to(dtype), LoraConfig(r=3, lora_alpha=5, target_modules=["emb", "fc"], init_lora_weights=False))
    inner = peft_model.base_model.model
    with torch.no_grad():
        for layer in (inner.emb, inner.fc):
            layer.base_layer.weight.copy_((-layer.get_delta_weight("default")).to(dtype))
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    base = os.path.join(d, "base.safetensors")
    save_file({"emb.weight": inner.emb.base_layer.weight.clone(), "fc.weight": inner.fc.base_layer.weight.clone(), "fc.bias": inner.fc.base_layer.bias.clone()}, base)
    peft_model.save_pretrained(os.path.join(d, "adapter"))
    sd = peft_model.merge_and_unload().state_dict()
    save_file({k: sd[k].detach().clone().contiguous() for k in ["emb.weight", "fc.weight", "fc.bias"]}, os.path.join(d, "truth.safetensors"))
    report[name] = {"base": base, "adapter": os.path.join(d, "adapter"), "truth": os.path.join(d, "truth.safetensors")}


def gguf_case(name, r, qtype, rank_pattern=None):
    """A tiny Llama written as a GGUF model, its PEFT adapter written as a llama.cpp GGUF LoRA adapter,
    both by gguf-py's GGUFWriter; truth: peft's merge_and_unload() under the GGUF names. The adapter
    follows llama.cpp's convert_lora_to_gguf.py (LoraModel: general.type 'adapter', adapter.type
    'lora', adapter.lora.alpha as float32; get_base_tensor_name and the model's tensor map for the
    names, '<name>.lora_a' = lora_A and '<name>.lora_b' = lora_B as they are, token_embd's lora_a
    transposed); the tensor map is gguf-py's, which convert_hf_to_gguf.py's map_tensor_name uses.
    Unlike LlamaModel.modify_tensors, q and k are not permuted for rope, in the base or in lora_b:
    a reordering of rows that both would share. With `qtype` the factors are quantized (the
    converter's --outtype q8_0) and peft merges the factors as gguf-py dequantizes them."""
    from transformers import LlamaConfig, LlamaForCausalLM
    import gguf
    from gguf.quants import quantize, dequantize
    torch.manual_seed(70)
    hidden = 32 if qtype else 16
    model = LlamaForCausalLM(LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2, num_attention_heads=2,
                                         num_key_value_heads=2, vocab_size=40, max_position_embeddings=16, tie_word_embeddings=False))
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
    to_gguf = lambda n: tmap.get_name(n, try_suffixes=(".weight", ".bias"))
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    names = {k: to_gguf(k) for k in sd}
    w = gguf.GGUFWriter(os.path.join(d, "base.gguf"), "llama")
    w.add_type(gguf.GGUFType.MODEL)
    for k, v in sd.items():
        w.add_tensor(names[k], v.numpy())
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    alpha = 8
    peft_model = get_peft_model(model, LoraConfig(r=r, lora_alpha=alpha, init_lora_weights=False, rank_pattern=rank_pattern or {},
                                                  target_modules=["q_proj", "v_proj", "o_proj", "gate_proj", "down_proj", "embed_tokens", "lm_head"]))
    lora = {k: v.detach().clone() for k, v in peft_model.state_dict().items() if ".lora_" in k}
    w = gguf.GGUFWriter(os.path.join(d, "adapter.gguf"), "llama")
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    pairs = {}
    for k, v in lora.items():
        base = k.replace("base_model.model.", "")
        for part in (".lora_A.default.weight", ".lora_B.default.weight", ".lora_embedding_A.default", ".lora_embedding_B.default"):
            base = base.replace(part, ".weight")
        pairs.setdefault(base, {})["A" if ("lora_A" in k or "lora_embedding_A" in k) else "B"] = (k, v)
    for base, ab in pairs.items():
        dest = to_gguf(base)
        (ka, a), (kb, b) = ab["A"], ab["B"]
        a_out = a.T.contiguous() if "token_embd.weight" in dest else a
        for suffix, key, t, back in ((".lora_a", ka, a_out, "token_embd.weight" in dest), (".lora_b", kb, b, False)):
            x = t.numpy()
            if qtype:
                q = quantize(x, qtype)
                w.add_tensor(dest + suffix, q, raw_dtype=qtype)
                x = dequantize(q, qtype).reshape(x.shape)
                with torch.no_grad():  # peft merges what llama.cpp reads
                    peft_model.get_parameter(key).copy_(torch.from_numpy(x.T.copy() if back else x))
            else:
                w.add_tensor(dest + suffix, x)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    merged = peft_model.merge_and_unload().state_dict()
    save_file({names[k]: merged[k].detach().clone().contiguous() for k in sd}, os.path.join(d, "truth.safetensors"))
    report[name] = {"base": os.path.join(d, "base.gguf"), "adapter": os.path.join(d, "adapter.gguf"), "truth": os.path.join(d, "truth.safetensors")}


gguf_case("gguf", 4, None, rank_pattern={"v_proj": 2})
from gguf import GGMLQuantizationType
gguf_case("gguf-q8_0", 32, GGMLQuantizationType.Q8_0)
cancel_case("cancel-f16", torch.float16)
cancel_case("cancel-bf16", torch.bfloat16)
print(json.dumps(report))
