//! The Prometheus text exposition format (version 0.0.4): a writer for the exporter and a
//! bounded parser for reading a scrape endpoint directly.
//!
//! Rules from the format's specification (prometheus/docs `content/docs/instrumenting/
//! exposition_formats.md`, "Text format details"): a sample line is `name{label="value",...}
//! value [timestamp]`; in label values `\`, `"` and line feed are escaped as `\\`, `\"` and
//! `\n`; in HELP text only `\` and line feed are; values are Go floats (`NaN`, `+Inf`, `-Inf`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Writes one metric family at a time into a string.
#[derive(Debug, Default)]
pub struct Writer {
    out: String,
}

impl Writer {
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            out: String::with_capacity(n),
        }
    }

    /// Starts a family: its `# HELP` and `# TYPE gauge` lines. Every metric here is a gauge: the
    /// sources report levels (bytes held now, a rate NVML already averaged), not counters.
    pub fn family(&mut self, name: &str, help: &str) {
        let _ = write!(self.out, "# HELP {name} ");
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c => self.out.push(c),
            }
        }
        let _ = writeln!(self.out, "\n# TYPE {name} gauge");
    }

    /// One sample line of the family started last.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape_label_value(&mut self.out, v);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        write_value(&mut self.out, value);
        self.out.push('\n');
    }

    pub fn finish(self) -> String {
        self.out
    }
}

fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Integers exactly (byte counts up to 2^53 are exact in f64), everything else in Rust's
/// shortest round-trip form, which Go's `strconv.ParseFloat` reads back.
fn write_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

/// One parsed sample: the metric name, its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Series {
    pub fn label(&self, k: &str) -> Option<&str> {
        self.labels.get(k).map(String::as_str)
    }
}

/// Reads the samples of a text-format body whose metric names `keep` accepts (others are skipped
/// without building their labels). At most `max_series` are returned; a malformed line is an
/// error naming its line number, because a half-understood scrape would be a silent wrong answer.
pub fn parse(
    body: &str,
    keep: impl Fn(&str) -> bool,
    max_series: usize,
) -> Result<Vec<Series>, String> {
    let mut out = Vec::new();
    for (i, line) in body.lines().enumerate() {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|c: char| c == '{' || c.is_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        if !valid_name(name) {
            return Err(format!("line {}: {name:?} is not a metric name", i + 1));
        }
        if !keep(name) {
            continue;
        }
        if out.len() >= max_series {
            return Err(format!(
                "more than {max_series} samples of GPU metrics; is this really one host's exporter?"
            ));
        }
        let mut rest = &line[name_end..];
        let mut labels = BTreeMap::new();
        if let Some(r) = rest.strip_prefix('{') {
            rest = parse_labels(r, &mut labels).map_err(|e| format!("line {}: {e}", i + 1))?;
        }
        let value = rest
            .split_whitespace()
            .next()
            .ok_or_else(|| format!("line {}: no value", i + 1))?;
        let value = parse_value(value)
            .ok_or_else(|| format!("line {}: {value:?} is not a number", i + 1))?;
        out.push(Series {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    Ok(out)
}

fn valid_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// Go float syntax as Prometheus writes it.
pub fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// Parses `k="v",...}` (after the opening brace); returns what follows the closing brace.
fn parse_labels<'a>(mut s: &'a str, out: &mut BTreeMap<String, String>) -> Result<&'a str, String> {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix('}') {
            return Ok(r);
        }
        let eq = s.find('=').ok_or("a label without '='")?;
        let key = s[..eq].trim();
        if !valid_name(key) {
            return Err(format!("{key:?} is not a label name"));
        }
        s = s[eq + 1..]
            .trim_start()
            .strip_prefix('"')
            .ok_or("a label value without quotes")?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("an unterminated label value".into()),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err("an unterminated label value".into()),
                },
                Some((_, c)) => value.push(c),
            }
        };
        out.insert(key.to_owned(), value);
        s = s[end + 1..].trim_start();
        s = s.strip_prefix(',').unwrap_or(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_round_trip_and_help_lines_come_first() {
        let mut w = Writer::default();
        w.family("m_bytes", "a \\ help\nline");
        w.sample("m_bytes", &[("name", "a \"q\" \\ b\nc"), ("pid", "7")], 1.5);
        w.sample("m_bytes", &[], 3.0);
        let text = w.finish();
        assert!(text.starts_with("# HELP m_bytes a \\\\ help\\nline\n# TYPE m_bytes gauge\n"));
        assert!(
            text.contains(r#"m_bytes{name="a \"q\" \\ b\nc",pid="7"} 1.5"#),
            "{text}"
        );
        let s = parse(&text, |_| true, 10).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label("name"), Some("a \"q\" \\ b\nc"));
        assert_eq!(s[0].value, 1.5);
        assert_eq!(s[1].value, 3.0);
    }

    #[test]
    fn values_integers_exact_and_specials() {
        let mut w = Writer::default();
        w.sample("a", &[], 25_757_220_864.0);
        w.sample("b", &[], f64::NAN);
        w.sample("c", &[], f64::INFINITY);
        w.sample("d", &[], 0.37);
        let t = w.finish();
        assert_eq!(t, "a 25757220864\nb NaN\nc +Inf\nd 0.37\n");
        let s = parse(&t, |_| true, 10).unwrap();
        assert!(s[1].value.is_nan());
        assert_eq!(s[2].value, f64::INFINITY);
    }

    #[test]
    fn parses_dcgm_style_lines_with_timestamps_and_skips_others() {
        let body = "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n\
                    # TYPE DCGM_FI_DEV_FB_USED gauge\n\
                    DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\", modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\"} 1024 1700000000000\n\
                    go_goroutines 12\n";
        let s = parse(body, |n| n.starts_with("DCGM"), 10).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].label("modelName"), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(s[0].value, 1024.0);
    }

    #[test]
    fn malformed_input_is_an_error_with_the_line_and_the_bound_holds() {
        for bad in [
            "x{a=\"1} 2",
            "x{a=1} 2",
            "x 1\n9bad 2",
            "x{a=\"1\"}",
            "x abc",
        ] {
            assert!(parse(bad, |_| true, 10).is_err(), "{bad}");
        }
        assert!(parse("x 1\nx 2\nx 3", |_| true, 2).is_err());
        assert_eq!(parse("x 1\ny 2", |n| n == "y", 1).unwrap().len(), 1);
    }
}
