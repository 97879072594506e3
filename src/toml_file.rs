//! Reading the user's TOML files (workloads, the user's own presets) with errors a person can act
//! on: the file, the line, and what is wrong there.

use serde::de::DeserializeOwned;

/// Parses `text` as TOML into `T`; `origin` names the file in the error, which gives the line of
/// the fault when the parser knows it ("workload.toml: line 3: unknown field `bach`").
pub fn parse<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, String> {
    toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().to_string();
        match e.span() {
            Some(span) => {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("{origin}: line {line}: {msg}")
            }
            None => format!("{origin}: {msg}"),
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_name_the_file_and_the_line() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct T {
            #[allow(dead_code)]
            a: i64,
        }
        let e = super::parse::<T>("a = 1\nb = 2\n", "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml: line 2: "), "{e}");
        let e = super::parse::<T>("a = 'one'\n", "x.toml").unwrap_err();
        assert!(e.starts_with("x.toml: line 1: "), "{e}");
    }
}
