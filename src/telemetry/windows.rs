//! Windows source: NVML for what it sees, plus the "GPU Adapter Memory" / "GPU Process Memory"
//! performance counters for shared memory and per-process use (see `pdh.rs`). Only the FFI is
//! here; it is compiled on Windows only and, unlike everything else in `telemetry`, not run by
//! the test suite (the CI machines are Linux).
//!
//! PDH calls and structs as documented on learn.microsoft.com (pdh.h): `PdhOpenQueryW`,
//! `PdhAddEnglishCounterW`, `PdhCollectQueryData`, `PdhGetFormattedCounterArrayW`,
//! `PdhCloseQuery`; `PDH_FMT_COUNTERVALUE_ITEM_W { LPWSTR szName; PDH_FMT_COUNTERVALUE FmtValue }`,
//! `PDH_FMT_COUNTERVALUE { DWORD CStatus; union { LONG; double; LONGLONG; ... } }`.

use super::nvml::NvmlSource;
use super::pdh::{self, Counters};
use super::sample::{Snapshot, SourceKind, SourceState};
use super::source::Source;
use std::ffi::c_void;

type PdhStatus = u32;
type Handle = *mut c_void;

const PDH_FMT_LARGE: u32 = 0x0000_0400;
const PDH_MORE_DATA: PdhStatus = 0x8000_07D2;
/// Upper bound for one counter array (bytes); thousands of processes fit in far less.
const MAX_BUFFER: u32 = 16 << 20;

#[repr(C)]
struct FmtValue {
    c_status: u32,
    large: i64,
}

#[repr(C)]
struct FmtItem {
    name: *mut u16,
    value: FmtValue,
}

#[link(name = "pdh")]
unsafe extern "system" {
    fn PdhOpenQueryW(data_source: *const u16, user_data: usize, query: *mut Handle) -> PdhStatus;
    fn PdhAddEnglishCounterW(
        query: Handle,
        path: *const u16,
        user_data: usize,
        counter: *mut Handle,
    ) -> PdhStatus;
    fn PdhCollectQueryData(query: Handle) -> PdhStatus;
    fn PdhGetFormattedCounterArrayW(
        counter: Handle,
        format: u32,
        buffer_size: *mut u32,
        item_count: *mut u32,
        items: *mut FmtItem,
    ) -> PdhStatus;
    fn PdhCloseQuery(query: Handle) -> PdhStatus;
}

fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().chain(std::iter::once(0)).collect()
}

/// An open PDH query with the four memory counters.
struct Query {
    query: Handle,
    counters: [Handle; 4],
}

// SAFETY: PDH query handles may be used from any thread as long as calls are not concurrent;
// the query is owned by one source, which is owned by one sampler thread.
unsafe impl Send for Query {}

impl Query {
    fn open() -> Option<Query> {
        let mut query: Handle = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a null data source means the live system.
        if unsafe { PdhOpenQueryW(std::ptr::null(), 0, &mut query) } != 0 {
            return None;
        }
        let mut q = Query {
            query,
            counters: [std::ptr::null_mut(); 4],
        };
        let paths = [
            pdh::ADAPTER_DEDICATED,
            pdh::ADAPTER_SHARED,
            pdh::PROCESS_DEDICATED,
            pdh::PROCESS_SHARED,
        ];
        for (slot, path) in q.counters.iter_mut().zip(paths) {
            let w = wide(path);
            // SAFETY: `w` is a NUL-terminated UTF-16 string alive for the call; out-pointer to a field.
            if unsafe { PdhAddEnglishCounterW(q.query, w.as_ptr(), 0, slot) } != 0 {
                return None; // `q` drops and closes the query; no GPU counters on this system.
            }
        }
        Some(q)
    }

    fn read(&self, counter: Handle) -> Vec<(String, u64)> {
        let (mut size, mut count) = (0u32, 0u32);
        // SAFETY: a size query with a null buffer, as documented.
        let rc = unsafe {
            PdhGetFormattedCounterArrayW(
                counter,
                PDH_FMT_LARGE,
                &mut size,
                &mut count,
                std::ptr::null_mut(),
            )
        };
        if rc != PDH_MORE_DATA || size == 0 || size > MAX_BUFFER {
            return Vec::new();
        }
        // u64 storage keeps the buffer aligned for `FmtItem`.
        let mut buf = vec![0u64; (size as usize).div_ceil(8)];
        // SAFETY: `buf` holds at least `size` bytes, aligned to 8.
        let rc = unsafe {
            PdhGetFormattedCounterArrayW(
                counter,
                PDH_FMT_LARGE,
                &mut size,
                &mut count,
                buf.as_mut_ptr().cast(),
            )
        };
        if rc != 0 {
            return Vec::new();
        }
        let items = buf.as_ptr().cast::<FmtItem>();
        let mut out = Vec::with_capacity(count as usize);
        for i in 0..count as usize {
            // SAFETY: PDH wrote `count` items at the start of `buf`, with names pointing into `buf`.
            let item = unsafe { &*items.add(i) };
            if item.value.c_status != 0 || item.name.is_null() {
                continue;
            }
            let mut len = 0;
            // SAFETY: `name` is a NUL-terminated UTF-16 string inside `buf`.
            while unsafe { *item.name.add(len) } != 0 {
                len += 1;
            }
            // SAFETY: `len` units were just read.
            let name =
                String::from_utf16_lossy(unsafe { std::slice::from_raw_parts(item.name, len) });
            out.push((name, item.value.large.max(0) as u64));
        }
        out
    }

    fn collect(&self) -> Option<Counters> {
        // SAFETY: a live query handle.
        if unsafe { PdhCollectQueryData(self.query) } != 0 {
            return None;
        }
        Some(Counters {
            adapter_dedicated: self.read(self.counters[0]),
            adapter_shared: self.read(self.counters[1]),
            process_dedicated: self.read(self.counters[2]),
            process_shared: self.read(self.counters[3]),
        })
    }
}

impl Drop for Query {
    fn drop(&mut self) {
        // SAFETY: closes the query opened in `open`, once.
        unsafe { PdhCloseQuery(self.query) };
    }
}

/// NVML plus the Windows counters.
pub struct WindowsSource {
    nvml: NvmlSource,
    query: Query,
}

impl WindowsSource {
    /// `None` when the GPU counters are missing (Windows before WDDM 2.0, a server without GPUs).
    pub fn open() -> Option<WindowsSource> {
        let query = Query::open()?;
        let lib = std::env::var_os(super::source::NVML_LIB_ENV).map(std::path::PathBuf::from);
        let s = WindowsSource {
            nvml: NvmlSource::new(lib),
            query,
        };
        let c = s.query.collect()?;
        (!pdh::adapters(&c).is_empty()).then_some(s)
    }
}

impl Source for WindowsSource {
    fn kind(&self) -> SourceKind {
        SourceKind::Windows
    }

    fn sample(&mut self) -> Snapshot {
        let mut snap = self.nvml.sample();
        let adapters = self
            .query
            .collect()
            .map(|c| pdh::adapters(&c))
            .unwrap_or_default();
        let left = pdh::merge(&mut snap.gpus, adapters);
        let next = snap.gpus.len() as u32;
        snap.gpus.extend(
            left.into_iter()
                .enumerate()
                .map(|(i, a)| pdh::adapter_sample(next + i as u32, a)),
        );
        if !snap.gpus.is_empty() {
            // NVML may be missing (another vendor's GPU); the counters still work.
            snap.state = SourceState::Ok;
        }
        snap.source = SourceKind::Windows;
        snap
    }
}
