//! `vram-doctor presets list [gpus|models|diffusion|games]`: the built-in presets, then the
//! user's own GPUs and models (added in the app's catalog tab), marked "(yours)".

use super::CliError;
use super::out::{out, outln};
use crate::catalog::Catalog;
use crate::catalog::user::{self, UserPresets};
use crate::printable::printable;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct PresetsArgs {
    #[command(subcommand)]
    pub action: PresetsAction,
}

#[derive(Debug, Subcommand)]
pub enum PresetsAction {
    /// List presets of one kind, or all.
    List {
        #[arg(value_enum)]
        kind: Option<PresetKind>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PresetKind {
    Gpus,
    Models,
    Diffusion,
    Games,
}

pub fn run(a: &PresetsArgs) -> Result<(), CliError> {
    let PresetsAction::List { kind } = &a.action;
    let c = Catalog::get();
    // The user's file is only read here, never moved or written: a bad one is reported and
    // left for the app to set aside.
    let mine = match user::default_path().and_then(|p| user::read(&p)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("note: your own presets are not listed: {e}");
            UserPresets::default()
        }
    };
    if matches!(kind, None | Some(PresetKind::Gpus)) {
        outln!("{:<24} {:>8} {:>10}  NAME", "GPU", "VRAM", "BANDWIDTH")?;
        for g in &c.gpus {
            outln!(
                "{:<24} {:>5.0} GiB {:>6.0} GB/s  {}",
                g.id,
                g.vram_gib,
                g.bandwidth_gbs,
                g.name
            )?;
        }
        for g in &mine.gpus {
            let bw = g.bandwidth_gbs.map_or("-".into(), |b| format!("{b:.0}"));
            outln!(
                "{:<24} {:>5} GiB {:>6} GB/s  {} (yours)",
                printable(&g.id),
                g.vram_gib,
                bw,
                printable(&g.name)
            )?;
        }
    }
    if kind.is_none() {
        outln!()?;
    }
    if matches!(kind, None | Some(PresetKind::Models)) {
        outln!(
            "{:<24} {:>9} {:>7} {:>9}  NAME",
            "MODEL",
            "PARAMS",
            "LAYERS",
            "CONTEXT"
        )?;
        for m in &c.models {
            let ctx = m
                .arch
                .max_context
                .map_or("-".to_string(), |c| c.to_string());
            outln!(
                "{:<24} {:>8.2}B {:>7} {:>9}  {}",
                m.id,
                m.arch.params / 1e9,
                m.arch.layers,
                ctx,
                m.name
            )?;
        }
        for m in &mine.models {
            let ctx = m.max_context.map_or("-".to_string(), |c| c.to_string());
            outln!(
                "{:<24} {:>8.2}B {:>7} {:>9}  {} (yours)",
                printable(&m.id),
                m.params / 1e9,
                m.layers,
                ctx,
                printable(&m.name)
            )?;
        }
    }
    if matches!(kind, None | Some(PresetKind::Diffusion)) {
        if kind.is_none() {
            outln!()?;
        }
        out!("{}", crate::memory::diffusion::catalog::listing())?;
    }
    if matches!(kind, None | Some(PresetKind::Games)) {
        if kind.is_none() {
            outln!()?;
        }
        out!("{}", crate::memory::game::catalog::listing())?;
    }
    Ok(())
}
