#!/usr/bin/env python3
"""Writes the ComfyUI test workflows in tests/data/comfy/: each one in the UI format
(NAME.json), the API format (NAME.api.json) and as a PNG with both embedded (NAME.png), the way
ComfyUI's SaveImage stores them (tEXt chunks "prompt" and "workflow", nodes.py SaveImage).

Widgets are listed in each node's INPUT_TYPES order (ComfyUI nodes.py, comfy_extras/*.py,
city96/ComfyUI-GGUF nodes.py); a seed is followed by the frontend's control_after_generate
value, which the API format does not carry. Run: python3 tests/data/comfy/gen_workflows.py
"""
import json, os, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FRONTEND_ONLY = {"control_after_generate", "upload"}


def ckpt(i, name):
    return (i, "CheckpointLoaderSimple", [("ckpt_name", name)], {})


def text(i, clip, t="a photo"):
    return (i, "CLIPTextEncode", [("text", t)], {"clip": clip})


def ksampler(i, model, pos, neg, latent, steps=20, cfg=7.0, denoise=1.0):
    return (i, "KSampler", [("seed", 1234), ("control_after_generate", "randomize"), ("steps", steps),
                            ("cfg", cfg), ("sampler_name", "euler"), ("scheduler", "normal"), ("denoise", denoise)],
            {"model": model, "positive": pos, "negative": neg, "latent_image": latent})


def decode(i, samples, vae):
    return (i, "VAEDecode", [], {"samples": samples, "vae": vae})


def save(i, images):
    return (i, "SaveImage", [("filename_prefix", "ComfyUI")], {"images": images})


def empty(i, w, h, b=1, cls="EmptyLatentImage"):
    return (i, cls, [("width", w), ("height", h), ("batch_size", b)], {})


M, C, V = "MODEL", "CLIP", "VAE"
WORKFLOWS = {
    "sd15": [
        ckpt(4, "v1-5-pruned-emaonly-fp16.safetensors"),
        text(6, (4, 1, C)), text(7, (4, 1, C), "blurry"),
        empty(5, 512, 512, 1),
        ksampler(3, (4, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (5, 0, "LATENT")),
        decode(8, (3, 0, "LATENT"), (4, 2, V)), save(9, (8, 0, "IMAGE")),
    ],
    "sdxl_refiner_lora_controlnet": [
        ckpt(4, "sd_xl_base_1.0.safetensors"),
        ckpt(12, "sd_xl_refiner_1.0.safetensors"),
        (10, "LoraLoader", [("lora_name", "add-detail-xl.safetensors"), ("strength_model", 1.0), ("strength_clip", 1.0)],
         {"model": (4, 0, M), "clip": (4, 1, C)}),
        text(6, (10, 1, C)), text(7, (10, 1, C), "blurry"),
        (20, "ControlNetLoader", [("control_net_name", "controlnet-canny-sdxl-1.0.safetensors")], {}),
        (21, "LoadImage", [("image", "canny.png"), ("upload", "image")], {}),
        (22, "ControlNetApplyAdvanced", [("strength", 0.8), ("start_percent", 0.0), ("end_percent", 1.0)],
         {"positive": (6, 0, "CONDITIONING"), "negative": (7, 0, "CONDITIONING"),
          "control_net": (20, 0, "CONTROL_NET"), "image": (21, 0, "IMAGE")}),
        empty(5, 1024, 1024, 1),
        (3, "KSamplerAdvanced", [("add_noise", "enable"), ("noise_seed", 1), ("control_after_generate", "fixed"), ("steps", 25),
                                 ("cfg", 7.0), ("sampler_name", "euler"), ("scheduler", "normal"), ("start_at_step", 0),
                                 ("end_at_step", 20), ("return_with_leftover_noise", "enable")],
         {"model": (10, 0, M), "positive": (22, 0, "CONDITIONING"), "negative": (22, 1, "CONDITIONING"), "latent_image": (5, 0, "LATENT")}),
        text(15, (12, 1, C)), text(16, (12, 1, C), "blurry"),
        (11, "KSamplerAdvanced", [("add_noise", "disable"), ("noise_seed", 1), ("control_after_generate", "fixed"), ("steps", 25),
                                  ("cfg", 7.0), ("sampler_name", "euler"), ("scheduler", "normal"), ("start_at_step", 20),
                                  ("end_at_step", 10000), ("return_with_leftover_noise", "disable")],
         {"model": (12, 0, M), "positive": (15, 0, "CONDITIONING"), "negative": (16, 0, "CONDITIONING"), "latent_image": (3, 0, "LATENT")}),
        decode(8, (11, 0, "LATENT"), (12, 2, V)), save(9, (8, 0, "IMAGE")),
    ],
    "sd35_large": [
        ckpt(4, "sd3.5_large.safetensors"),
        (11, "TripleCLIPLoader", [("clip_name1", "clip_l.safetensors"), ("clip_name2", "clip_g.safetensors"),
                                  ("clip_name3", "t5xxl_fp16.safetensors")], {}),
        text(6, (11, 0, C)), text(7, (11, 0, C), ""),
        empty(5, 1024, 1024, 1, "EmptySD3LatentImage"),
        (13, "ModelSamplingSD3", [("shift", 3.0)], {"model": (4, 0, M)}),
        ksampler(3, (13, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (5, 0, "LATENT"), 28, 4.5),
        decode(8, (3, 0, "LATENT"), (4, 2, V)), save(9, (8, 0, "IMAGE")),
    ],
    "flux_checkpoint_fp8": [
        ckpt(4, "flux1-dev-fp8.safetensors"),
        text(6, (4, 1, C)),
        (26, "FluxGuidance", [("guidance", 3.5)], {"conditioning": (6, 0, "CONDITIONING")}),
        (33, "ConditioningZeroOut", [], {"conditioning": (6, 0, "CONDITIONING")}),
        empty(5, 1024, 1024, 1, "EmptySD3LatentImage"),
        ksampler(3, (4, 0, M), (26, 0, "CONDITIONING"), (33, 0, "CONDITIONING"), (5, 0, "LATENT"), 20, 1.0),
        decode(8, (3, 0, "LATENT"), (4, 2, V)), save(9, (8, 0, "IMAGE")),
    ],
    "flux_split_loaders": [
        (12, "UNETLoader", [("unet_name", "flux1-dev.safetensors"), ("weight_dtype", "default")], {}),
        (11, "DualCLIPLoader", [("clip_name1", "t5xxl_fp16.safetensors"), ("clip_name2", "clip_l.safetensors"),
                                ("type", "flux"), ("device", "default")], {}),
        (10, "VAELoader", [("vae_name", "ae.safetensors")], {}),
        text(6, (11, 0, C)),
        (26, "FluxGuidance", [("guidance", 3.5)], {"conditioning": (6, 0, "CONDITIONING")}),
        empty(27, 1024, 1024, 1, "EmptySD3LatentImage"),
        (25, "RandomNoise", [("noise_seed", 5), ("control_after_generate", "randomize")], {}),
        (16, "KSamplerSelect", [("sampler_name", "euler")], {}),
        (17, "BasicScheduler", [("scheduler", "simple"), ("steps", 20), ("denoise", 1.0)], {"model": (12, 0, M)}),
        (22, "BasicGuider", [], {"model": (12, 0, M), "conditioning": (26, 0, "CONDITIONING")}),
        (13, "SamplerCustomAdvanced", [], {"noise": (25, 0, "NOISE"), "guider": (22, 0, "GUIDER"), "sampler": (16, 0, "SAMPLER"),
                                          "sigmas": (17, 0, "SIGMAS"), "latent_image": (27, 0, "LATENT")}),
        decode(8, (13, 0, "LATENT"), (10, 0, V)), save(9, (8, 0, "IMAGE")),
    ],
    "flux_gguf": [
        (12, "UnetLoaderGGUF", [("unet_name", "flux1-dev-Q4_K_S.gguf")], {}),
        (11, "DualCLIPLoader", [("clip_name1", "t5xxl_fp8_e4m3fn.safetensors"), ("clip_name2", "clip_l.safetensors"),
                                ("type", "flux"), ("device", "default")], {}),
        (10, "VAELoader", [("vae_name", "ae.safetensors")], {}),
        text(6, (11, 0, C)), text(7, (11, 0, C), ""),
        empty(5, 1024, 1024, 1, "EmptySD3LatentImage"),
        ksampler(3, (12, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (5, 0, "LATENT"), 20, 1.0),
        (8, "VAEDecodeTiled", [("tile_size", 512), ("overlap", 64), ("temporal_size", 64), ("temporal_overlap", 8)],
         {"samples": (3, 0, "LATENT"), "vae": (10, 0, V)}),
        save(9, (8, 0, "IMAGE")),
    ],
    "wan21_t2v": [
        (37, "UNETLoader", [("unet_name", "wan2.1_t2v_1.3B_fp16.safetensors"), ("weight_dtype", "default")], {}),
        (38, "CLIPLoader", [("clip_name", "umt5_xxl_fp8_e4m3fn_scaled.safetensors"), ("type", "wan"), ("device", "default")], {}),
        (39, "VAELoader", [("vae_name", "wan_2.1_vae.safetensors")], {}),
        text(6, (38, 0, C)), text(7, (38, 0, C), "static"),
        (40, "EmptyHunyuanLatentVideo", [("width", 832), ("height", 480), ("length", 33), ("batch_size", 1)], {}),
        (48, "ModelSamplingSD3", [("shift", 8.0)], {"model": (37, 0, M)}),
        ksampler(3, (48, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (40, 0, "LATENT"), 30, 6.0),
        decode(8, (3, 0, "LATENT"), (39, 0, V)),
        (28, "SaveAnimatedWEBP", [("filename_prefix", "ComfyUI"), ("fps", 16), ("lossless", False), ("quality", 90), ("method", "default")],
         {"images": (8, 0, "IMAGE")}),
    ],
    "hunyuan_video": [
        (12, "UNETLoader", [("unet_name", "hunyuan_video_t2v_720p_bf16.safetensors"), ("weight_dtype", "fp8_e4m3fn")], {}),
        (11, "DualCLIPLoader", [("clip_name1", "clip_l.safetensors"), ("clip_name2", "llava_llama3_fp8_scaled.safetensors"),
                                ("type", "hunyuan_video"), ("device", "default")], {}),
        (10, "VAELoader", [("vae_name", "hunyuan_video_vae_bf16.safetensors")], {}),
        text(44, (11, 0, C)),
        (26, "FluxGuidance", [("guidance", 6.0)], {"conditioning": (44, 0, "CONDITIONING")}),
        (45, "EmptyHunyuanLatentVideo", [("width", 848), ("height", 480), ("length", 73), ("batch_size", 1)], {}),
        (22, "BasicGuider", [], {"model": (12, 0, M), "conditioning": (26, 0, "CONDITIONING")}),
        (25, "RandomNoise", [("noise_seed", 5), ("control_after_generate", "randomize")], {}),
        (16, "KSamplerSelect", [("sampler_name", "euler")], {}),
        (17, "BasicScheduler", [("scheduler", "simple"), ("steps", 20), ("denoise", 1.0)], {"model": (12, 0, M)}),
        (13, "SamplerCustomAdvanced", [], {"noise": (25, 0, "NOISE"), "guider": (22, 0, "GUIDER"), "sampler": (16, 0, "SAMPLER"),
                                          "sigmas": (17, 0, "SIGMAS"), "latent_image": (45, 0, "LATENT")}),
        (73, "VAEDecodeTiled", [("tile_size", 256), ("overlap", 64), ("temporal_size", 64), ("temporal_overlap", 8)],
         {"samples": (13, 0, "LATENT"), "vae": (10, 0, V)}),
        (78, "SaveAnimatedWEBP", [("filename_prefix", "ComfyUI"), ("fps", 24), ("lossless", False), ("quality", 80), ("method", "default")],
         {"images": (73, 0, "IMAGE")}),
    ],
    "sdxl_hires_fix": [
        ckpt(4, "sd_xl_base_1.0_0.9vae.safetensors"),
        text(6, (4, 1, C)), text(7, (4, 1, C), "blurry"),
        empty(5, 1024, 1024, 2),
        ksampler(3, (4, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (5, 0, "LATENT"), 20, 7.0),
        (10, "LatentUpscaleBy", [("upscale_method", "nearest-exact"), ("scale_by", 1.5)], {"samples": (3, 0, "LATENT")}),
        ksampler(11, (4, 0, M), (6, 0, "CONDITIONING"), (7, 0, "CONDITIONING"), (10, 0, "LATENT"), 15, 7.0, 0.5),
        decode(8, (11, 0, "LATENT"), (4, 2, V)), save(9, (8, 0, "IMAGE")),
        (30, "Note", [("text", "hires fix: second pass at 1.5x")], {}),
        (31, "SomeCustomUpscaler", [("factor", 2)], {"image": (8, 0, "IMAGE")}),
    ],
}


def ui(nodes):
    links, link_id, out_nodes = [], 0, []
    for order, (i, cls, widgets, inputs) in enumerate(nodes):
        ins = []
        for slot, (name, (src, src_slot, kind)) in enumerate(inputs.items()):
            link_id += 1
            links.append([link_id, src, src_slot, i, slot, kind])
            ins.append({"name": name, "type": kind, "link": link_id})
        out_nodes.append({"id": i, "type": cls, "pos": [order * 300, 0], "size": [300, 100], "flags": {},
                          "order": order, "mode": 0, "inputs": ins, "outputs": [],
                          "properties": {"Node name for S&R": cls}, "widgets_values": [v for _, v in widgets]})
    return {"last_node_id": max(n[0] for n in nodes), "last_link_id": link_id, "nodes": out_nodes, "links": links,
            "groups": [], "config": {}, "extra": {}, "version": 0.4}


def api(nodes):
    out = {}
    for i, cls, widgets, inputs in nodes:
        if cls == "Note":
            continue
        ins = {k: v for k, v in widgets if k not in FRONTEND_ONLY}
        ins.update({k: [str(src), slot] for k, (src, slot, _) in inputs.items()})
        out[str(i)] = {"inputs": ins, "class_type": cls, "_meta": {"title": cls}}
    return out


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(prompt, workflow):
    raw = b"".join(b"\0" + b"\x80\x80\x80" * 8 for _ in range(8))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0))
            + chunk(b"tEXt", b"prompt\0" + json.dumps(prompt).encode("latin-1"))
            + chunk(b"tEXt", b"workflow\0" + json.dumps(workflow).encode("latin-1"))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


for name, nodes in WORKFLOWS.items():
    u, a = ui(nodes), api(nodes)
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(u, f, indent=1)
    with open(os.path.join(HERE, name + ".api.json"), "w") as f:
        json.dump(a, f, indent=1)
    with open(os.path.join(HERE, name + ".png"), "wb") as f:
        f.write(png(a, u))
