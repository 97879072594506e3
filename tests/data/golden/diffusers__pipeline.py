# VRAM Doctor plan for Stable Diffusion XL base 1.0 on 8 GiB GPU: 1024×1024, batch 1.
import torch
from diffusers import DiffusionPipeline

pipe = DiffusionPipeline.from_pretrained(
    "REPLACE-with-the-repo-of-Stable-Diffusion-XL-base-1.0",
    torch_dtype=torch.bfloat16,
)
pipe.unet.enable_layerwise_casting(storage_dtype=torch.float8_e4m3fn, compute_dtype=torch.bfloat16)
pipe.enable_model_cpu_offload()

result = pipe(
    prompt="a photo of a cat",
    width=1024,
    height=1024,
    num_images_per_prompt=1,
).images
