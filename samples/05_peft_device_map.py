"""QLoRA fine-tuning of a causal LM loaded with `device_map="auto"`, run with `torchrun --nproc_per_node 2`.

`device_map="auto"` lets accelerate spread (and offload) the layers over every visible GPU
and the cpu; the model is then dispatched, not "on a device". Two mistakes follow:
the dispatched model is moved again with `.to("cuda")` (accelerate refuses or breaks the
offload hooks), and LoRA training in every process runs on a model spread over every GPU.
(The batches sent to a fixed "cuda:0" are moved by accelerate's input hooks to the first
layer's device: clumsy, not a device error.)
"""
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

BASE = "mistralai/Mistral-7B-v0.1"


def load_model():
    bnb = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(BASE, quantization_config=bnb, device_map="auto")
    model = prepare_model_for_kbit_training(model)
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return get_peft_model(model, lora)


def main():
    tokenizer = AutoTokenizer.from_pretrained(BASE)
    tokenizer.pad_token = tokenizer.eos_token
    model = load_model()
    model.to("cuda")
    optimizer = torch.optim.AdamW((p for p in model.parameters() if p.requires_grad), lr=2e-4)

    texts = ["The capital of France is Paris.", "PyTorch tensors live on exactly one device."] * 8
    model.train()
    for start in range(0, len(texts), 4):
        batch = tokenizer(texts[start:start + 4], return_tensors="pt", padding=True)
        batch = {k: v.to("cuda:0") for k, v in batch.items()}
        out = model(**batch, labels=batch["input_ids"])
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(f"step {start // 4}: loss {out.loss.item():.3f}")


if __name__ == "__main__":
    main()
