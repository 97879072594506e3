# VRAM Doctor plan for Llama 3.1 8B on 4 × 24 GiB GPU.
# Truncate examples to 4096 tokens (trl SFTConfig max_length=4096); each batch is padded to its longest example, and the plan's peak is a batch with one of 4096 tokens.
# Pure bf16: load the model with dtype=torch.bfloat16, so weights and optimizer states stay bf16 (no fp32 master copy).
# DeepSpeed's bf16 mode keeps an fp32 master copy of the weights (sharded by ZeRO), which the plan's pure-bf16 figure leaves out.
# use_liger_kernel needs `pip install liger-kernel` and a model family it patches (Llama, Mistral, Qwen, Gemma …).
# Launch on all 4 GPUs: deepspeed --num_gpus 4 train.py.
deepspeed --num_gpus 4 train.py \
  --output_dir out \
  --per_device_train_batch_size 1 \
  --gradient_accumulation_steps 8 \
  --bf16 \
  --gradient_checkpointing \
  --optim adamw_torch \
  --use_liger_kernel \
  --deepspeed ds_config.json
