//! A [`Source`] that reads a fleet's GPUs over the network: a Prometheus server's HTTP API
//! (one instant query per sample for every metric in `presets/prometheus.toml`, and a range
//! query at start so the plots and detectors begin with the last 15 minutes), or an exporter's
//! `/metrics` read directly.
//!
//! API shapes from the Prometheus documentation (prometheus/docs `content/docs/prometheus/latest/
//! querying/api.md`): `GET /api/v1/query?query=` answers `{"status":"success","data":
//! {"resultType":"vector","result":[{"metric":{..},"value":[t,"v"]}]}}`, `query_range` answers
//! a `matrix` whose series carry `"values":[[t,"v"],..]`; errors are `"status":"error"` with
//! `"error"` text.
//!
//! A server that stops answering is [`SourceState::Unreachable`] with the reason and the next
//! try (backing off from 1 s to 30 s so a dead host does not cost a timeout per second); every
//! GPU seen before is still listed, with no metric ("not reported"), so the plots go on with a
//! gap instead of freezing on the last value.

use super::families::{Families, MAX_GPUS};
use super::http::{self, Url, encode_query};
use super::text::{self, Series};
use crate::telemetry::sample::{GpuSample, Snapshot, SourceKind, SourceState, now_ms};
use crate::telemetry::source::Source;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One request's time limit.
const TIMEOUT: Duration = Duration::from_secs(3);
/// Answers larger than this are refused (a 15-minute range of a 64-GPU fleet is about 10 MB).
const MAX_BODY: usize = 32 << 20;
/// Series one answer may hold.
const MAX_SERIES: usize = 200_000;
/// The history asked for at start: the longest span the monitor's plots show.
pub const BACKFILL: Duration = Duration::from_secs(15 * 60);
/// Points per series in that range query, at most.
const BACKFILL_POINTS: u64 = 300;
const MAX_BACKOFF_S: u64 = 30;

/// Where the readings come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    /// A Prometheus server; the URL's path is its route prefix (often empty).
    Api(Url),
    /// An exporter's text-format endpoint.
    Scrape(Url),
}

pub struct PrometheusSource {
    endpoint: Endpoint,
    /// Every GPU seen so far, without its metrics, keyed by [`GpuSample::key`].
    known: BTreeMap<String, GpuSample>,
    failures: u32,
    next_try: Option<Instant>,
    last_error: String,
}

impl PrometheusSource {
    /// `url`: a Prometheus server (`http://host:9090`) or an exporter's endpoint (a URL whose
    /// path ends in `/metrics`).
    pub fn open(url: &str) -> Result<PrometheusSource, String> {
        let u = Url::parse(url)?;
        let endpoint = if u.path.trim_end_matches('/').ends_with("/metrics") {
            Endpoint::Scrape(u)
        } else {
            if u.path.contains('?') {
                return Err(format!(
                    "{url}: give the Prometheus server's address without a query (like http://host:9090)"
                ));
            }
            let prefix = u.path.trim_end_matches('/').to_owned();
            Endpoint::Api(u.with_path(&prefix))
        };
        Ok(PrometheusSource {
            endpoint,
            known: BTreeMap::new(),
            failures: 0,
            next_try: None,
            last_error: String::new(),
        })
    }

    fn describe(&self) -> String {
        match &self.endpoint {
            Endpoint::Api(u) => format!(
                "the Prometheus server at http://{}{}",
                u.authority(),
                u.path
            ),
            Endpoint::Scrape(u) => format!("the exporter at http://{}{}", u.authority(), u.path),
        }
    }

    /// The GPUs the endpoint reports now.
    fn fetch(&self) -> Result<Vec<GpuSample>, String> {
        let f = Families::builtin();
        match &self.endpoint {
            Endpoint::Scrape(u) => {
                let body = get_ok(u)?;
                let body = String::from_utf8_lossy(&body);
                let series = text::parse(&body, |n| f.knows(n), MAX_SERIES)?;
                Ok(f.assemble(&series, &u.authority()))
            }
            Endpoint::Api(u) => {
                let path = format!(
                    "{}/api/v1/query?query={}",
                    u.path,
                    encode_query(&f.selector())
                );
                let data = api(&u.with_path(&path))?;
                let series = vector(&data)?;
                Ok(f.assemble(&series, &u.authority()))
            }
        }
    }

    /// Adds `gpus` to the known ones and lists every known GPU: those not in `gpus` without
    /// metrics.
    fn merge(&mut self, gpus: Vec<GpuSample>) -> Vec<GpuSample> {
        let mut now: BTreeMap<String, GpuSample> = BTreeMap::new();
        for g in gpus {
            if !self.known.contains_key(&g.key()) && self.known.len() >= MAX_GPUS {
                continue;
            }
            self.known.insert(g.key(), identity(&g));
            now.insert(g.key(), g);
        }
        let mut out: Vec<GpuSample> = self
            .known
            .iter()
            .map(|(k, id)| now.remove(k).unwrap_or_else(|| id.clone()))
            .collect();
        out.sort_by(|a, b| (&a.host, a.index, &a.uuid).cmp(&(&b.host, b.index, &b.uuid)));
        out
    }

    fn snapshot(&self, state: SourceState, gpus: Vec<GpuSample>) -> Snapshot {
        Snapshot {
            time_ms: now_ms(),
            source: SourceKind::Prometheus,
            state,
            gpus,
            notes: Vec::new(),
        }
    }

    /// The known GPUs with no metric, and why.
    fn unreachable(&self, wait: Duration) -> Snapshot {
        let why = format!(
            "{} does not answer ({}); next try in {} s",
            self.describe(),
            self.last_error,
            wait.as_secs_f64().ceil()
        );
        let gpus = self.known.values().cloned().collect();
        self.snapshot(SourceState::Unreachable(why), gpus)
    }
}

/// A GPU's identity with every metric "not reported".
fn identity(g: &GpuSample) -> GpuSample {
    GpuSample {
        index: g.index,
        uuid: g.uuid.clone(),
        name: g.name.clone(),
        host: g.host.clone(),
        ..GpuSample::default()
    }
}

impl Source for PrometheusSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Prometheus
    }

    fn sample(&mut self) -> Snapshot {
        if let Some(t) = self.next_try {
            let wait = t.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                return self.unreachable(wait);
            }
        }
        match self.fetch() {
            Ok(gpus) => {
                self.failures = 0;
                self.next_try = None;
                let gpus = self.merge(gpus);
                let state = if gpus.is_empty() {
                    SourceState::Error(format!(
                        "{} answers but has no GPU metrics of DCGM-exporter, nvidia_gpu_exporter or vram-doctor; check its scrape targets",
                        self.describe()
                    ))
                } else {
                    SourceState::Ok
                };
                self.snapshot(state, gpus)
            }
            Err(e) => {
                self.failures = self.failures.saturating_add(1);
                let wait =
                    Duration::from_secs((1u64 << (self.failures - 1).min(5)).min(MAX_BACKOFF_S));
                self.next_try = Some(Instant::now() + wait);
                self.last_error = e;
                self.unreachable(wait)
            }
        }
    }

    /// The last [`BACKFILL`] from a range query, oldest first (nothing for a scrape endpoint,
    /// which has no history, or when the query fails: live samples then say why).
    fn backfill(&mut self, interval: Duration) -> Vec<Snapshot> {
        let Endpoint::Api(u) = &self.endpoint else {
            return Vec::new();
        };
        let f = Families::builtin();
        let end = now_ms() / 1000;
        let span = BACKFILL.as_secs();
        let step = (span / BACKFILL_POINTS).max(interval.as_secs().max(1));
        let path = format!(
            "{}/api/v1/query_range?query={}&start={}&end={end}&step={step}",
            u.path,
            encode_query(&f.selector()),
            end - span
        );
        let Ok(data) = api(&u.with_path(&path)) else {
            return Vec::new();
        };
        let Ok(by_time) = matrix(&data) else {
            return Vec::new();
        };
        let host = u.authority();
        let mut out = Vec::with_capacity(by_time.len());
        for (t, series) in by_time {
            let gpus = f.assemble(&series, &host);
            let gpus = self.merge(gpus);
            out.push(Snapshot {
                time_ms: t,
                source: SourceKind::Prometheus,
                state: SourceState::Ok,
                gpus,
                notes: Vec::new(),
            });
        }
        out
    }
}

fn get_ok(u: &Url) -> Result<Vec<u8>, String> {
    let r = http::get(u, TIMEOUT, MAX_BODY)?;
    if r.status != 200 {
        return Err(format!("HTTP status {}", r.status));
    }
    Ok(r.body)
}

/// Calls the query API; the `data` object of a successful answer.
fn api(u: &Url) -> Result<Value, String> {
    let r = http::get(u, TIMEOUT, MAX_BODY)?;
    let v: Value = serde_json::from_slice(&r.body).map_err(|_| {
        format!(
            "HTTP status {}, and the answer is not the Prometheus API's JSON (is this a Prometheus server?)",
            r.status
        )
    })?;
    if v["status"] != "success" {
        let err = v["error"].as_str().unwrap_or("no reason given");
        return Err(format!("the query failed: {err}"));
    }
    Ok(v["data"].clone())
}

fn labels(metric: &Value) -> Option<(String, BTreeMap<String, String>)> {
    let obj = metric.as_object()?;
    let mut labels = BTreeMap::new();
    for (k, v) in obj {
        labels.insert(k.clone(), v.as_str()?.to_owned());
    }
    let name = labels.remove("__name__")?;
    Some((name, labels))
}

/// A `[time, "value"]` pair: (ms, value).
fn point(p: &Value) -> Option<(u64, f64)> {
    let t = p.get(0)?.as_f64()?;
    let v = text::parse_value(p.get(1)?.as_str()?)?;
    Some(((t * 1000.0).round().max(0.0) as u64, v))
}

fn results(data: &Value, kind: &str) -> Result<Vec<Value>, String> {
    if data["resultType"] != kind {
        return Err(format!(
            "the server answered a {} where a {kind} was asked for",
            data["resultType"]
        ));
    }
    let r = data["result"]
        .as_array()
        .ok_or("the answer has no result list")?;
    if r.len() > MAX_SERIES {
        return Err(format!("the answer has more than {MAX_SERIES} series"));
    }
    Ok(r.clone())
}

fn vector(data: &Value) -> Result<Vec<Series>, String> {
    let mut out = Vec::new();
    for r in results(data, "vector")? {
        let (Some((name, labels)), Some((_, value))) = (labels(&r["metric"]), point(&r["value"]))
        else {
            return Err("a result the parser does not understand".into());
        };
        out.push(Series {
            name,
            labels,
            value,
        });
    }
    Ok(out)
}

/// A range answer regrouped by time: each instant's series, oldest first.
fn matrix(data: &Value) -> Result<BTreeMap<u64, Vec<Series>>, String> {
    let mut by_time: BTreeMap<u64, Vec<Series>> = BTreeMap::new();
    for r in results(data, "matrix")? {
        let (name, labels) = labels(&r["metric"]).ok_or("a series without a name")?;
        for p in r["values"].as_array().ok_or("a series without values")? {
            let (t, value) = point(p).ok_or("a point the parser does not understand")?;
            by_time.entry(t).or_default().push(Series {
                name: name.clone(),
                labels: labels.clone(),
                value,
            });
        }
    }
    Ok(by_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_the_api_or_a_scrape() {
        let a = PrometheusSource::open("http://prom:9090/").unwrap();
        assert_eq!(
            a.endpoint,
            Endpoint::Api(Url::parse("http://prom:9090").unwrap().with_path(""))
        );
        let s = PrometheusSource::open("http://node:9400/metrics").unwrap();
        assert!(matches!(s.endpoint, Endpoint::Scrape(_)));
        assert!(PrometheusSource::open("https://prom").is_err());
        assert!(PrometheusSource::open("http://prom:9090/api?x=1").is_err());
    }

    #[test]
    fn vectors_and_matrices_parse_and_errors_say_so() {
        let v: Value = serde_json::from_str(
            r#"{"resultType":"vector","result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","UUID":"G","instance":"n:9400"},"value":[1700000000.5,"33"]}]}"#,
        )
        .unwrap();
        let s = vector(&v).unwrap();
        assert_eq!(
            (s[0].name.as_str(), s[0].value),
            ("DCGM_FI_DEV_GPU_UTIL", 33.0)
        );
        assert!(matrix(&v).is_err(), "a vector is not a matrix");
        let m: Value = serde_json::from_str(
            r#"{"resultType":"matrix","result":[{"metric":{"__name__":"x","gpu":"0"},"values":[[10,"1"],[13,"2"]]},{"metric":{"__name__":"y"},"values":[[13,"5"]]}]}"#,
        )
        .unwrap();
        let by_time = matrix(&m).unwrap();
        assert_eq!(
            by_time.keys().copied().collect::<Vec<_>>(),
            [10_000, 13_000]
        );
        assert_eq!(by_time[&13_000].len(), 2);
    }

    #[test]
    fn a_dead_server_is_unreachable_with_the_known_gpus_and_backs_off() {
        // A port nothing listens on: bind, note it, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = PrometheusSource::open(&format!("http://127.0.0.1:{port}")).unwrap();
        s.known.insert(
            "G".into(),
            GpuSample {
                uuid: Some("G".into()),
                host: Some("n".into()),
                ..GpuSample::default()
            },
        );
        let a = s.sample();
        let SourceState::Unreachable(why) = &a.state else {
            panic!("{:?}", a.state)
        };
        assert!(
            why.contains(&format!("127.0.0.1:{port}")) && why.contains("next try"),
            "{why}"
        );
        assert_eq!(a.gpus.len(), 1);
        assert_eq!(a.gpus[0].memory, None);
        // Inside the back-off no request is made, and the answer is the same kind.
        let t = Instant::now();
        assert!(matches!(s.sample().state, SourceState::Unreachable(_)));
        assert!(t.elapsed() < Duration::from_millis(100));
    }
}
