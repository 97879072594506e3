# VRAM Doctor plan for Llama 3.1 8B on 12 GiB GPU: batch 1 × 8192 tokens.
import torch
from transformers import AutoTokenizer, AutoModelForCausalLM, BitsAndBytesConfig

quantization_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True,
    bnb_4bit_compute_dtype=torch.bfloat16,
)
model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-3.1-8B",
    dtype=torch.bfloat16,
    quantization_config=quantization_config,
    attn_implementation="sdpa",
    device_map={"": 0},
)
tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B")

# Keep prompt + generated tokens within 8192 per sequence and at most 1 sequences per batch.
MAX_LENGTH = 8192
BATCH_SIZE = 1
