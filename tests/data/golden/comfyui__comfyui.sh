# VRAM Doctor plan for FLUX.1 [dev] on 8 GiB GPU: 1024×1024, batch 1.
# Nodes:
#   EmptyLatentImage (Empty Latent Image): width 1024, height 1024, batch_size 1.
#   Load Diffusion Model: weight_dtype fp8_e4m3fn (same as --fp8_e4m3fn-unet).
python main.py \
  --fp8_e4m3fn-unet \
  --bf16-vae
