# VRAM Doctor plan for Llama 3.1 8B on 1 × 24 GiB GPU: gptq-8bit weights, up to 32 sequences of 4096 tokens.
# Serve a gptq-8bit checkpoint of the model: vLLM reads the method from its quantization_config (it does not quantize).
vllm serve REPLACE-with-a-gptq-8bit-repo-of-Llama-3.1-8B \
  --dtype float16 \
  --max-model-len 4096 \
  --max-num-seqs 32 \
  --gpu-memory-utilization 0.90 \
  --kv-cache-dtype fp8
