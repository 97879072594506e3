# VRAM Doctor plan for Llama 3.1 8B on 12 GiB GPU; train with trl's SFTTrainer and the TrainingArguments export (training_args.py: SFTConfig takes the same fields).
# use_gradient_checkpointing="unsloth" also moves the checkpointed layers' inputs to CPU RAM: less GPU memory than this plan.
# Unsloth does not upcast the non-quantized parameters to fp32 as PEFT's prepare_model_for_kbit_training (which the plan assumes) does: a little less memory.
import torch
from unsloth import FastLanguageModel

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name="meta-llama/Llama-3.1-8B",
    max_seq_length=1024,
    dtype=torch.bfloat16,
    load_in_4bit=True,
    load_in_8bit=False,
    full_finetuning=False,
    use_gradient_checkpointing=True,
)
model = FastLanguageModel.get_peft_model(
    model,
    r=16,
    lora_alpha=32,
    lora_dropout=0,
    target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
    use_gradient_checkpointing=True,
)
