//! `--retry-on-oom`: the one change a second run makes, and only when the doctor's top-ranked
//! fix is an environment setting (`copy = "NAME=value"` in causes.toml, such as
//! `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` for fragmentation). Anything else (a flag
//! of the program, a code change) is the user's to make; the reason is said, never skipped
//! silently.

use crate::doctor::diagnosis::Diagnosis;
use serde::{Deserialize, Serialize};

/// One environment variable to set for the second run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvChange {
    /// The fix (causes.toml id) and the cause it is for.
    pub fix: String,
    pub cause: String,
    pub var: String,
    /// The value in the watcher's environment before, if set.
    pub old: Option<String>,
    pub new: String,
}

impl EnvChange {
    /// "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (was unset)".
    pub fn describe(&self) -> String {
        let was = match &self.old {
            Some(o) => format!("was {o:?}"),
            None => "was unset".into(),
        };
        format!("{}={} ({was})", self.var, self.new)
    }
}

/// `NAME=value` with a POSIX-style name and a value without spaces.
fn as_env(copy: &str) -> Option<(&str, &str)> {
    let (name, value) = copy.split_once('=')?;
    let name_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    (name_ok && !value.is_empty() && !value.contains(char::is_whitespace)).then_some((name, value))
}

/// PyTorch's allocator settings are one variable of comma-separated `key:value` options
/// (pytorch c10/core/AllocatorConfig.cpp, `ConfigTokenizer`; c10/cuda/CUDAAllocatorConfig.cpp
/// in older releases):
/// a fix's option replaces the same key and keeps the others.
fn merge_options(old: &str, add: &str) -> String {
    let key = |o: &str| o.split(':').next().unwrap_or("").trim().to_string();
    let added: Vec<String> = add.split(',').map(key).collect();
    let mut parts: Vec<&str> = old
        .split(',')
        .filter(|o| !o.trim().is_empty() && !added.contains(&key(o)))
        .collect();
    parts.push(add);
    parts.join(",")
}

/// The change for the top-ranked fix: the first fix listed for the first cause. `Err` says why
/// there is none. `current` reads the watcher's environment.
pub fn env_fix(
    d: &Diagnosis,
    current: impl Fn(&str) -> Option<String>,
) -> Result<EnvChange, String> {
    let cause = d
        .causes
        .first()
        .ok_or("the doctor named no cause, so there is no fix to try")?;
    let fix = d
        .fixes
        .iter()
        .find(|f| f.for_causes.contains(&cause.id))
        .ok_or_else(|| format!("the top cause ({}) lists no fix", cause.title))?;
    let Some((var, value)) = fix.copy.as_deref().and_then(as_env) else {
        return Err(format!(
            "the top fix is not an environment setting: {}",
            fix.text
        ));
    };
    let old = current(var);
    let new = match &old {
        Some(o) if var.ends_with("_ALLOC_CONF") => merge_options(o, value),
        _ => value.to_string(),
    };
    if old.as_deref() == Some(new.as_str()) {
        return Err(format!(
            "the top fix ({var}={value}) is already set in this environment"
        ));
    }
    Ok(EnvChange {
        fix: fix.id.clone(),
        cause: cause.id.clone(),
        var: var.to_string(),
        old,
        new,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::reading::read;
    use crate::doctor::{Context, Knowledge, View, WizardState};

    fn diagnosis(message: &str) -> Diagnosis {
        let kb = Knowledge::get();
        let r = read(message, kb, None).unwrap();
        let s =
            WizardState::start(kb, &kb.root, Context::default().observations(Some(&r))).unwrap();
        match s.view(kb, "en").unwrap() {
            View::Result { diagnosis, .. } => diagnosis,
            View::Question { .. } => s.evidence_diagnosis(kb, "en"),
        }
    }

    const FRAGMENTED: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total capacity of 6.00 GiB of which 0 bytes is free. Of the allocated memory 2.93 GiB is allocated by PyTorch, and 2.30 GiB is reserved by PyTorch but unallocated.";

    #[test]
    fn fragmentation_retries_with_expandable_segments_merged_into_the_old_setting() {
        let d = diagnosis(FRAGMENTED);
        let c = env_fix(&d, |_| None).unwrap();
        assert_eq!(
            (c.var.as_str(), c.new.as_str()),
            ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
        );
        assert_eq!(
            c.describe(),
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (was unset)"
        );
        let merged = env_fix(&d, |_| {
            Some("garbage_collection_threshold:0.6,expandable_segments:False".into())
        })
        .unwrap();
        assert_eq!(
            merged.new,
            "garbage_collection_threshold:0.6,expandable_segments:True"
        );
        let same = env_fix(&d, |_| Some("expandable_segments:True".into())).unwrap_err();
        assert!(same.contains("already set"), "{same}");
    }

    #[test]
    fn a_fix_that_is_not_an_environment_setting_is_refused_with_the_reason() {
        // An impossible request: the top fix is to make the input smaller.
        let d = diagnosis(
            "CUDA out of memory. Tried to allocate 55.57 GiB. GPU 0 has a total capacty of 12.00 GiB of which 9.02 GiB is free. Of the allocated memory 984.52 MiB is allocated by PyTorch, and 463.48 MiB is reserved by PyTorch but unallocated.",
        );
        let e = env_fix(&d, |_| None).unwrap_err();
        assert!(e.contains("not an environment setting"), "{e}");
        assert_eq!(
            as_env("CUDA - Sysmem Fallback Policy = Prefer No Sysmem Fallback"),
            None
        );
        assert_eq!(as_env("--reserve-vram 1.0"), None);
        assert_eq!(
            as_env("CUDA_VISIBLE_DEVICES=1"),
            Some(("CUDA_VISIBLE_DEVICES", "1"))
        );
    }
}
