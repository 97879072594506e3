# VRAM Doctor plan for Llama 3.1 8B on 12 GiB GPU: q4_k_m weights, 2 slot(s) × 32768 tokens.
# -ngl 999 keeps every layer on the GPU, as the plan counts them; -c is the context of all slots together.
# Older builds take -fa without a value.
llama-server \
  -m Llama-3.1-8B-Q4_K_M.gguf \
  -ngl 999 \
  -c 65536 \
  -np 2 \
  -fa on \
  --cache-type-k q8_0 \
  --cache-type-v q8_0 \
  -b 2048 \
  -ub 512
