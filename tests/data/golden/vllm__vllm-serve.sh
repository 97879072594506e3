# VRAM Doctor plan for Llama 3.1 8B on 1 × 24 GiB GPU: gptq-8bit weights, up to 32 sequences of 4096 tokens.
# Serve a gptq-8bit checkpoint of the model (vLLM reads the quantized weights, it does not make them).
vllm serve meta-llama/Llama-3.1-8B \
  --dtype bfloat16 \
  --quantization gptq \
  --max-model-len 4096 \
  --max-num-seqs 32 \
  --gpu-memory-utilization 0.90 \
  --kv-cache-dtype fp8
