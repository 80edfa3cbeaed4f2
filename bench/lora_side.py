# The Python side of bench/lora.mjs. `make DIR MIB`: a random GPT-2 of about MIB MiB (n_embd 1024,
# float32) saved by save_pretrained, and a LoRA adapter (r 16 on c_attn, c_proj, c_fc; non-zero A and
# B) saved by peft's save_pretrained; a set already made is kept. `serve DIR`: times a case when asked
# (paired.mjs): `merge`, peft's way: from_pretrained, PeftModel.from_pretrained, merge_and_unload(),
# save_pretrained.
import json, os, sys, warnings
import side_serve  # bench/side_serve.py, beside this file

warnings.filterwarnings('ignore')
os.environ.setdefault('TRANSFORMERS_VERBOSITY', 'error')
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from peft import LoraConfig, PeftModel, get_peft_model


def make(d, mib):
    base = os.path.join(d, 'base')
    if os.path.exists(os.path.join(d, 'adapter', 'adapter_config.json')):
        print(json.dumps({'bytes': os.path.getsize(os.path.join(base, 'model.safetensors'))}))
        return
    torch.manual_seed(0)
    layers = max(1, round(int(mib) / 48))  # 12 · 1024² float32 a layer
    model = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_embd=1024, n_head=16, vocab_size=1000, n_positions=64))
    model.save_pretrained(base)
    config = LoraConfig(r=16, lora_alpha=32, target_modules=['c_attn', 'c_proj', 'c_fc'], fan_in_fan_out=True, init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(os.path.join(d, 'adapter'))
    print(json.dumps({'bytes': os.path.getsize(os.path.join(base, 'model.safetensors'))}))


def merge(d):
    model = GPT2LMHeadModel.from_pretrained(os.path.join(d, 'base'))
    merged = PeftModel.from_pretrained(model, os.path.join(d, 'adapter')).merge_and_unload()
    merged.save_pretrained(os.path.join(d, 'peft-merged'))


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(sys.argv[2], sys.argv[3])
    else:
        d = sys.argv[2]
        side_serve.serve({'merge': lambda: merge(d)})
