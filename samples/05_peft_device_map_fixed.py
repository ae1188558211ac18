"""QLoRA fine-tuning of a causal LM, one full copy per process (clean version).

Clean counterpart of 05_peft_device_map.py: the quantized model is loaded whole onto this
process's GPU (`device_map={"": local_rank}`), never moved again, and the batches follow
`model.device`.
"""
import os

import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

BASE = "mistralai/Mistral-7B-v0.1"


def load_model(local_rank):
    bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(BASE, quantization_config=bnb, device_map={"": local_rank})
    model = prepare_model_for_kbit_training(model)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return get_peft_model(model, lora)


def main():
    tokenizer = AutoTokenizer.from_pretrained(BASE)
    tokenizer.pad_token = tokenizer.eos_token
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    model = load_model(local_rank)
    optimizer = torch.optim.AdamW((p for p in model.parameters() if p.requires_grad), lr=2e-4)

    texts = ["The capital of France is Paris.", "PyTorch tensors live on exactly one device."] * 8
    model.train()
    for start in range(0, len(texts), 4):
        batch = tokenizer(texts[start:start + 4], return_tensors="pt", padding=True)
        batch = {k: v.to(model.device) for k, v in batch.items()}
        out = model(**batch, labels=batch["input_ids"])
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {start // 4}: loss {out.loss.item():.3f}")


if __name__ == "__main__":
    main()
