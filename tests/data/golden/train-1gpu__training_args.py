# VRAM Doctor plan for Llama 3.1 8B on 1 × 24 GiB GPU.
# Truncate examples to 2048 tokens (trl SFTConfig max_length=2048); each batch is padded to its longest example, and the plan's peak is a batch with one of 2048 tokens.
# use_liger_kernel needs `pip install liger-kernel` and a model family it patches (Llama, Mistral, Qwen, Gemma …).
# lora adapters: wrap the model as in the PEFT export (peft_config.py).
# Model: meta-llama/Llama-3.1-8B
from transformers import TrainingArguments

training_args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=1,
    gradient_accumulation_steps=1,
    bf16=True,
    gradient_checkpointing=True,
    optim="adamw_torch",
    use_liger_kernel=True,
)
