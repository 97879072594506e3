// VRAM Doctor plan for Qwen2.5 14B Instruct on NVIDIA GeForce RTX 4060: q4_k_m weights, 16384 tokens of context.
// GPU offload 28 of 49 layers (llama.cpp -ngl 28; the output layer counts as the last); LM Studio takes it as a share and rounds it to layers itself, so check its slider shows 28.
// Run with: npx tsx lmstudio-load.ts (npm install @lmstudio/sdk)
// CLI equivalent (no KV cache type or expert setting there): lms load MODEL_KEY --gpu 0.571 --context-length 16384
import { LMStudioClient } from "@lmstudio/sdk";

// The key `lms ls` lists for your download of this model.
const MODEL_KEY = "qwen2.5-14b-instruct";

const client = new LMStudioClient();
const model = await client.llm.load(MODEL_KEY, {
  config: {
    contextLength: 16384,
    gpu: { ratio: 0.571 },
    flashAttention: true,
    offloadKVCacheToGpu: true,
    evalBatchSize: 512,
    llamaKCacheQuantizationType: "q8_0",
    llamaVCacheQuantizationType: "q8_0",
  },
});
console.log(`loaded ${model.identifier}`);
