//! Which exporters' metrics the remote source understands (`presets/prometheus.toml`: ours,
//! DCGM-exporter's, nvidia_gpu_exporter's) and how their series become [`GpuSample`]s: one
//! table, so the PromQL the source sends and the mapping it applies cannot drift apart.

use super::text::Series;
use crate::telemetry::sample::{GpuSample, GpuStatus, MemorySample, ProcessSample, SharedMemory};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

const TABLE: &str = include_str!("../../../presets/prometheus.toml");

/// GPUs one reading keeps at most (a bound against a server with endless label values).
pub const MAX_GPUS: usize = 256;
/// Processes kept per GPU.
pub const MAX_PROCESSES: usize = 64;

/// The sample field a metric fills, in that field's unit after `scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    Info,
    Index,
    Up,
    MemoryTotal,
    MemoryUsed,
    MemoryFree,
    MemoryReserved,
    SharedUsed,
    SharedTotal,
    UtilGpu,
    UtilMem,
    TempC,
    PowerW,
    PowerLimitW,
    ClockGraphicsMhz,
    ClockMemMhz,
    PcieRxKbps,
    PcieTxKbps,
    ProcessUsed,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    pub metric: String,
    pub field: Field,
    #[serde(default = "one")]
    pub scale: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Family {
    pub name: String,
    pub uuid_label: String,
    #[serde(default)]
    pub index_label: Option<String>,
    pub name_label: String,
    #[serde(default)]
    pub host_label: Option<String>,
    #[serde(default)]
    pub pid_label: Option<String>,
    #[serde(default)]
    pub process_label: Option<String>,
    pub metrics: Vec<Metric>,
}

#[derive(Debug, Deserialize)]
struct Table {
    family: Vec<Family>,
}

/// Every family, and each metric name's family and mapping.
pub struct Families {
    pub list: Vec<Family>,
    by_metric: HashMap<String, (usize, usize)>,
}

impl Families {
    /// The built-in table (parsed once; a test checks that it parses).
    pub fn builtin() -> &'static Families {
        static F: OnceLock<Families> = OnceLock::new();
        F.get_or_init(|| {
            let t: Table = toml::from_str(TABLE).unwrap_or_else(|e| {
                panic!("presets/prometheus.toml is broken (a build defect): {e}")
            });
            let mut by_metric = HashMap::new();
            for (fi, f) in t.family.iter().enumerate() {
                for (mi, m) in f.metrics.iter().enumerate() {
                    by_metric.insert(m.metric.clone(), (fi, mi));
                }
            }
            Families {
                list: t.family,
                by_metric,
            }
        })
    }

    pub fn knows(&self, metric: &str) -> bool {
        self.by_metric.contains_key(metric)
    }

    /// The PromQL selector of every known metric: one instant query reads a whole fleet.
    pub fn selector(&self) -> String {
        let mut names: Vec<&str> = self.by_metric.keys().map(String::as_str).collect();
        names.sort_unstable();
        format!("{{__name__=~\"{}\"}}", names.join("|"))
    }

    /// Turns series into GPUs, sorted by host and index. `default_host` names the host of
    /// series without a host label or `instance` (a scrape endpoint read directly).
    pub fn assemble(&self, series: &[Series], default_host: &str) -> Vec<GpuSample> {
        let mut gpus: BTreeMap<String, Partial> = BTreeMap::new();
        for s in series {
            let Some(&(fi, mi)) = self.by_metric.get(&s.name) else {
                continue;
            };
            let (fam, m) = (&self.list[fi], &self.list[fi].metrics[mi]);
            let uuid = s.label(&fam.uuid_label).filter(|u| !u.is_empty());
            let index = fam
                .index_label
                .as_deref()
                .and_then(|l| s.label(l))
                .and_then(|i| i.parse::<u32>().ok());
            let host = fam
                .host_label
                .as_deref()
                .and_then(|l| s.label(l))
                .or_else(|| s.label("instance"))
                .unwrap_or(default_host);
            // UUIDs are unique across machines: the same card seen through two exporters is one.
            let key = match (uuid, index) {
                (Some(u), _) => u.to_owned(),
                (None, Some(i)) => format!("{host}/index-{i}"),
                (None, None) => continue,
            };
            if !gpus.contains_key(&key) && gpus.len() >= MAX_GPUS {
                continue;
            }
            let g = gpus.entry(key).or_insert_with(|| Partial {
                host: host.to_owned(),
                uuid: uuid.map(str::to_owned),
                ..Partial::default()
            });
            g.index = g.index.or(index);
            if m.field != Field::ProcessUsed && g.name.is_none() {
                g.name = s.label(&fam.name_label).map(str::to_owned);
            }
            g.set(fam, m, s);
        }
        let mut out: Vec<GpuSample> = gpus.into_values().map(Partial::finish).collect();
        out.sort_by(|a, b| (&a.host, a.index, &a.uuid).cmp(&(&b.host, b.index, &b.uuid)));
        out
    }
}

/// What one reading said about one GPU so far.
#[derive(Debug, Default)]
struct Partial {
    host: String,
    uuid: Option<String>,
    index: Option<u32>,
    name: Option<String>,
    values: HashMap<FieldKey, f64>,
    processes: Vec<ProcessSample>,
}

type FieldKey = u8;

impl Partial {
    fn set(&mut self, fam: &Family, m: &Metric, s: &Series) {
        if !s.value.is_finite() {
            return;
        }
        let v = s.value * m.scale;
        match m.field {
            Field::Info => {}
            Field::Index => {
                self.index = self.index.or(Some(v.max(0.0) as u32));
            }
            Field::ProcessUsed => {
                let pid = fam
                    .pid_label
                    .as_deref()
                    .and_then(|l| s.label(l))
                    .and_then(|p| p.parse().ok());
                if let Some(pid) = pid
                    && self.processes.len() < MAX_PROCESSES
                {
                    self.processes.push(ProcessSample {
                        pid,
                        name: fam
                            .process_label
                            .as_deref()
                            .and_then(|l| s.label(l))
                            .map(str::to_owned),
                        used: Some(v.max(0.0) as u64),
                        ..ProcessSample::default()
                    });
                }
            }
            f => {
                // The first exporter to report a field wins.
                self.values.entry(f as FieldKey).or_insert(v);
            }
        }
    }

    fn get(&self, f: Field) -> Option<f64> {
        self.values.get(&(f as FieldKey)).copied()
    }

    fn bytes(&self, f: Field) -> Option<u64> {
        self.get(f).map(|v| v.max(0.0).round() as u64)
    }

    fn int(&self, f: Field) -> Option<u32> {
        self.get(f).map(|v| v.max(0.0).round() as u32)
    }

    fn finish(self) -> GpuSample {
        let reserved = self.bytes(Field::MemoryReserved);
        let (used, free, total) = (
            self.bytes(Field::MemoryUsed),
            self.bytes(Field::MemoryFree),
            self.bytes(Field::MemoryTotal),
        );
        let total = total.or_else(|| Some(used? + free? + reserved.unwrap_or(0)));
        let used = used.or_else(|| {
            Some(
                total?
                    .saturating_sub(free?)
                    .saturating_sub(reserved.unwrap_or(0)),
            )
        });
        let memory = match (total, used) {
            (Some(total), Some(used)) => Some(MemorySample {
                total,
                used,
                reserved,
                used_includes_reserved: false,
            }),
            _ => None,
        };
        let index = self.index.unwrap_or(0);
        let lost = self.get(Field::Up) == Some(0.0);
        GpuSample {
            index,
            uuid: self.uuid.clone(),
            name: self.name.clone().unwrap_or_else(|| format!("GPU {index}")),
            host: Some(self.host.clone()),
            source: None,
            status: if lost { GpuStatus::Lost } else { GpuStatus::Ok },
            memory,
            shared: self.bytes(Field::SharedUsed).map(|used| SharedMemory {
                used,
                total: self.bytes(Field::SharedTotal),
            }),
            util_gpu_pct: self.int(Field::UtilGpu),
            util_mem_pct: self.int(Field::UtilMem),
            temp_c: self.int(Field::TempC),
            power_w: self.get(Field::PowerW),
            power_limit_w: self.get(Field::PowerLimitW),
            clock_graphics_mhz: self.int(Field::ClockGraphicsMhz),
            clock_mem_mhz: self.int(Field::ClockMemMhz),
            pcie_rx_kbps: self.int(Field::PcieRxKbps),
            pcie_tx_kbps: self.int(Field::PcieTxKbps),
            throttle: None,
            processes: (!self.processes.is_empty()).then_some(self.processes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::parse;
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_table_parses_and_every_metric_name_is_unique() {
        let f = Families::builtin();
        let n: usize = f.list.iter().map(|f| f.metrics.len()).sum();
        assert_eq!(n, f.by_metric.len(), "a metric name appears twice");
        assert!(f.list.iter().any(|f| f.name == "dcgm-exporter"));
        assert!(f.selector().contains("DCGM_FI_DEV_FB_USED|"));
    }

    #[test]
    fn dcgm_series_become_gpus_per_host_in_bytes_and_missing_fields_stay_absent() {
        let body = r#"
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"} 70000
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"} 10000
DCGM_FI_DEV_FB_RESERVED{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"} 559
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"} 97
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a"} 1
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-c",modelName="NVIDIA A10",Hostname="node-0"} 40
"#;
        let f = Families::builtin();
        let series = parse(body, |n| f.knows(n), 100).unwrap();
        let gpus = f.assemble(&series, "fallback:1");
        let hosts: Vec<_> = gpus
            .iter()
            .map(|g| (g.host.as_deref().unwrap(), g.index))
            .collect();
        assert_eq!(hosts, [("node-0", 0), ("node-a", 0), ("node-a", 1)]);
        let b = &gpus[2];
        let m = b.memory.unwrap();
        assert_eq!(m.used, 70000 * MIB);
        assert_eq!(m.reserved, Some(559 * MIB));
        assert_eq!(m.total, (70000 + 10000 + 559) * MIB);
        assert_eq!(b.util_gpu_pct, Some(97));
        assert_eq!(b.temp_c, None, "not reported stays absent");
        assert_eq!(b.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(
            gpus[1].memory, None,
            "used without free or total is no memory figure"
        );
        assert_eq!(gpus[0].temp_c, Some(40));
    }

    #[test]
    fn nvidia_smi_exporter_series_use_the_instance_and_the_info_name() {
        let body = r#"
nvidia_smi_gpu_info{uuid="GPU-x",name="NVIDIA GeForce RTX 3090",instance="box:9835"} 1
nvidia_smi_index{uuid="GPU-x",instance="box:9835"} 2
nvidia_smi_memory_total_bytes{uuid="GPU-x",instance="box:9835"} 25769803776
nvidia_smi_memory_used_bytes{uuid="GPU-x",instance="box:9835"} 8589934592
nvidia_smi_utilization_gpu_ratio{uuid="GPU-x",instance="box:9835"} 0.42
nvidia_smi_clocks_current_graphics_clock_hz{uuid="GPU-x",instance="box:9835"} 1.695e+09
"#;
        let f = Families::builtin();
        let gpus = f.assemble(&parse(body, |n| f.knows(n), 100).unwrap(), "x");
        assert_eq!(gpus.len(), 1);
        let g = &gpus[0];
        assert_eq!(
            (g.host.as_deref(), g.index, g.name.as_str()),
            (Some("box:9835"), 2, "NVIDIA GeForce RTX 3090")
        );
        assert_eq!(g.memory.unwrap().used, 8 << 30);
        assert_eq!(g.util_gpu_pct, Some(42));
        assert_eq!(g.clock_graphics_mhz, Some(1695));
    }

    #[test]
    fn gpus_are_bounded_and_processes_too() {
        let f = Families::builtin();
        let mut body = String::new();
        for i in 0..MAX_GPUS + 10 {
            body.push_str(&format!(
                "DCGM_FI_DEV_GPU_UTIL{{gpu=\"{i}\",UUID=\"U{i}\"}} 1\n"
            ));
        }
        for p in 0..MAX_PROCESSES + 5 {
            body.push_str(&format!(
                "vram_doctor_process_memory_used_bytes{{gpu=\"0\",uuid=\"U0\",pid=\"{p}\",process=\"p\"}} 5\n"
            ));
        }
        let gpus = f.assemble(&parse(&body, |n| f.knows(n), 10_000).unwrap(), "h");
        assert_eq!(gpus.len(), MAX_GPUS);
        let g0 = gpus
            .iter()
            .find(|g| g.uuid.as_deref() == Some("U0"))
            .unwrap();
        assert_eq!(g0.processes.as_ref().unwrap().len(), MAX_PROCESSES);
    }
}
