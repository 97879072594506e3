//! GPU presets (`presets/gpus.toml`): parsed and checked here; the type is `types::Gpu`.

use crate::types::gpu::Gpu;
use serde::Deserialize;

pub(super) fn parse(text: &str) -> Result<Vec<Gpu>, String> {
    #[derive(Deserialize)]
    struct File {
        gpu: Vec<Gpu>,
    }
    let f: File = toml::from_str(text).map_err(|e| format!("presets/gpus.toml: {e}"))?;
    for g in &f.gpu {
        g.validate()
            .map_err(|e| format!("presets/gpus.toml: {}: {e}", g.id))?;
    }
    Ok(f.gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARD: &str = r#"
[[gpu]]
id = "x"
name = "X"
vendor = "nvidia"
kind = "desktop"
vram_gib = 8.0
bandwidth_gbs = 448.0
pcie_gen = 4
pcie_lanes = 16
bf16 = true
fp8 = false
source = "test"
"#;

    #[test]
    fn bad_figures_name_the_field() {
        assert!(parse(CARD).is_ok());
        let bad_lanes = parse(&CARD.replace("pcie_lanes = 16", "pcie_lanes = 12")).unwrap_err();
        assert!(
            bad_lanes.contains("pcie_lanes 12") && bad_lanes.contains(": x:"),
            "{bad_lanes}"
        );
        let no_link = parse(&CARD.replace("pcie_gen = 4", "pcie_gen = 0")).unwrap_err();
        assert!(no_link.contains("pcie_gen 0"), "{no_link}");
        let bw = parse(&CARD.replace("448.0", "-1.0")).unwrap_err();
        assert!(bw.contains("bandwidth_gbs"), "{bw}");
        let vram = parse(&CARD.replace("vram_gib = 8.0", "vram_gib = 0.0")).unwrap_err();
        assert!(vram.contains("vram_gib"), "{vram}");
    }
}
