#!/usr/bin/env python3
"""FLOPs of one denoiser forward (one sample) for each model preset of presets/diffusion.toml.

Builds each released model from its published config (the diffusers classes, on the meta device:
no weights, no download), runs one forward at the preset's native size and at twice the width and
height under torch.utils.flop_counter.FlopCounterMode (matmuls, convolutions, SDPA), and splits the
count into the part that grows with the image tokens and the part that grows with their square
(self-attention's QK^T and AV): F(s) = linear * s + attention * s^2, s = tokens / native tokens.

Prints the `denoise_gflops` and `attention_gflops` lines of each model preset and the
`decode_gflops_per_mpx` of the image VAEs. Run with the calibration
venv (torch, diffusers):  $HOME/.cache/vram-doctor/calibration-venv/bin/python tools/diffusion_flops.py
"""
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode
import diffusers as d

# Configs: the `config.json` of each released checkpoint's unet/ or transformer/ folder
# (keys that only affect weights loading are left out). Parameter counts are checked against
# presets/diffusion.toml `params`.
SDXL = dict(
    sample_size=128, block_out_channels=[320, 640, 1280],
    down_block_types=["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"],
    up_block_types=["CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
    transformer_layers_per_block=[1, 2, 10], attention_head_dim=[5, 10, 20],
    cross_attention_dim=2048, addition_embed_type="text_time", addition_time_embed_dim=256,
    projection_class_embeddings_input_dim=2816, use_linear_projection=True,
)
REFINER = dict(
    sample_size=128, block_out_channels=[384, 768, 1536, 1536],
    down_block_types=["DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
    up_block_types=["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"],
    transformer_layers_per_block=4, attention_head_dim=[6, 12, 24, 24],
    cross_attention_dim=1280, addition_embed_type="text_time", addition_time_embed_dim=256,
    projection_class_embeddings_input_dim=2560, use_linear_projection=True,
)
SD3 = dict(sample_size=128, patch_size=2, in_channels=16, num_layers=24, attention_head_dim=64,
           num_attention_heads=24, joint_attention_dim=4096, caption_projection_dim=1536,
           pooled_projection_dim=2048, out_channels=16, pos_embed_max_size=192)
SD35M = dict(SD3, pos_embed_max_size=384, qk_norm="rms_norm",
             dual_attention_layers=tuple(range(13)))
SD35L = dict(SD3, num_layers=38, num_attention_heads=38, caption_projection_dim=2432,
             qk_norm="rms_norm")
WAN14 = dict(patch_size=(1, 2, 2), num_attention_heads=40, attention_head_dim=128, in_channels=16,
             out_channels=16, text_dim=4096, freq_dim=256, ffn_dim=13824, num_layers=40,
             cross_attn_norm=True, qk_norm="rms_norm_across_heads", eps=1e-6)
WAN13 = dict(WAN14, num_attention_heads=12, ffn_dim=8960, num_layers=30)

B = 1


def unet(cfg, ctx_dim, tokens, xl):
    def run(m, lh, lw):
        x = torch.randn(B, 4, lh, lw)
        kw = {}
        if xl:
            kw["added_cond_kwargs"] = {
                "text_embeds": torch.randn(B, 1280),
                "time_ids": torch.randn(B, 6 if cfg is SDXL else 5),
            }
        m(x, torch.tensor([1.0]), torch.randn(B, tokens, ctx_dim), **kw)
    return lambda: d.UNet2DConditionModel(**cfg), run, 8


def sd3(cfg, text):
    def run(m, lh, lw):
        m(torch.randn(B, 16, lh, lw), encoder_hidden_states=torch.randn(B, text, 4096),
          pooled_projections=torch.randn(B, 2048), timestep=torch.tensor([1.0]))
    return lambda: d.SD3Transformer2DModel(**cfg), run, 8


def flux(guidance, text):
    def run(m, lh, lw):
        n = (lh // 2) * (lw // 2)
        kw = {"guidance": torch.tensor([3.5])} if guidance else {}
        m(torch.randn(B, n, 64), encoder_hidden_states=torch.randn(B, text, 4096),
          pooled_projections=torch.randn(B, 768), timestep=torch.tensor([1.0]),
          img_ids=torch.zeros(n, 3), txt_ids=torch.zeros(text, 3), **kw)
    return lambda: d.FluxTransformer2DModel(guidance_embeds=guidance), run, 8


def pixart():
    cfg = dict(num_attention_heads=16, attention_head_dim=72, in_channels=4, out_channels=8,
               num_layers=28, sample_size=128, patch_size=2, cross_attention_dim=1152,
               caption_channels=4096, norm_type="ada_norm_single", interpolation_scale=2,
               use_additional_conditions=False)

    def run(m, lh, lw):
        m(torch.randn(B, 4, lh, lw), encoder_hidden_states=torch.randn(B, 300, 4096),
          timestep=torch.tensor([1.0]), added_cond_kwargs={"resolution": None,
                                                            "aspect_ratio": None})
    return lambda: d.PixArtTransformer2DModel(**cfg), run, 8


def wan(cfg, frames):
    def run(m, lh, lw):
        m(torch.randn(B, 16, frames, lh, lw), timestep=torch.tensor([1.0]),
          encoder_hidden_states=torch.randn(B, 512, 4096))
    return lambda: d.WanTransformer3DModel(**cfg), run, 8


# id: (builder, native width, height)
MODELS = {
    "sd15": (unet(dict(cross_attention_dim=768), 768, 77, False), 512, 512),
    "sd21": (unet(dict(cross_attention_dim=1024, attention_head_dim=[5, 10, 20, 20],
                       use_linear_projection=True), 1024, 77, False), 768, 768),
    "sdxl": (unet(SDXL, 2048, 77, True), 1024, 1024),
    "sdxl-refiner": (unet(REFINER, 1280, 77, True), 1024, 1024),
    "sd3-medium": (sd3(SD3, 333), 1024, 1024),
    "sd35-medium": (sd3(SD35M, 333), 1024, 1024),
    "sd35-large": (sd3(SD35L, 333), 1024, 1024),
    "flux-dev": (flux(True, 512), 1024, 1024),
    "flux-schnell": (flux(False, 256), 1024, 1024),
    "pixart-sigma": (pixart(), 1024, 1024),
    # 81 frames -> 21 latent frames (Wan VAE: 4x temporal, first frame on its own).
    "wan21-t2v-14b": (wan(WAN14, 21), 1280, 720),
    "wan21-t2v-1.3b": (wan(WAN13, 21), 832, 480),
}


def count(make, run, lh, lw):
    with torch.device("meta"):
        m = make()
        with FlopCounterMode(display=False) as f:
            run(m, lh, lw)
    return f.get_total_flops(), sum(p.numel() for p in m.parameters())


# VAE parts: the decoder of one 1024x1024 image (2^20 pixels); convolutions dominate, so the
# count is linear in the pixels (the one mid-block attention is counted in it).
VAES = {
    "sd-vae": dict(latent_channels=4),
    "sd3-vae": dict(latent_channels=16, use_quant_conv=False, use_post_quant_conv=False),
}


def vae_decode(cfg):
    base = dict(in_channels=3, out_channels=3, block_out_channels=[128, 256, 512, 512],
                down_block_types=["DownEncoderBlock2D"] * 4,
                up_block_types=["UpDecoderBlock2D"] * 4, layers_per_block=2)
    with torch.device("meta"):
        m = d.AutoencoderKL(**base, **cfg)
        with FlopCounterMode(display=False) as f:
            m.decode(torch.randn(1, cfg["latent_channels"], 128, 128))
    return f.get_total_flops()


def main(ids):
    for vid, cfg in VAES.items():
        if not ids or vid in ids:
            print(f"# {vid}\ndecode_gflops_per_mpx = {vae_decode(cfg) / 1e9:.0f}")
    for mid in [i for i in ids if i in MODELS] or ([] if ids else MODELS):
        (make, run, vf), w, h = MODELS[mid]
        try:
            f1, params = count(make, run, h // vf, w // vf)
            f4, _ = count(make, run, 2 * h // vf, 2 * w // vf)
        except Exception as e:  # noqa: BLE001 - report the model and go on
            print(f"# {mid}: not counted: {str(e).splitlines()[0]}")
            continue
        # F(1) = a + b, F(4) = 4a + 16b.
        b = (f4 - 4 * f1) / 12
        print(f"# {mid}: {params} params, {w}x{h}: {f1 / 1e9:.0f} GFLOPs; 2x each side: {f4 / 1e9:.0f}")
        print(f"denoise_gflops = {f1 / 1e9:.0f}\nattention_gflops = {max(b, 0) / 1e9:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
