//! Windows source: NVML for what it sees, plus the "GPU Adapter Memory" / "GPU Process Memory"
//! performance counters for shared memory and per-process use, merged by `pdh::CountersSource`.
//! Only the FFI that reads the live counters is here; it is compiled on Windows only. The tests
//! run it under Wine (`tests/wine_nvml.rs`), which has no GPU counters, so what they check here
//! is the refusal; the grouping and merging of real counter data run everywhere (`pdh.rs`, and
//! recordings through `pdh_csv.rs`).
//!
//! PDH calls and structs as documented on learn.microsoft.com (pdh.h): `PdhOpenQueryW`,
//! `PdhAddEnglishCounterW`, `PdhCollectQueryData`, `PdhGetFormattedCounterArrayW`,
//! `PdhCloseQuery`; `PDH_FMT_COUNTERVALUE_ITEM_W { LPWSTR szName; PDH_FMT_COUNTERVALUE FmtValue }`,
//! `PDH_FMT_COUNTERVALUE { DWORD CStatus; union { LONG; double; LONGLONG; ... } }`.

use super::nvml::NvmlSource;
use super::pdh::{self, CounterFeed, Counters, CountersSource};
use super::sample::SourceKind;
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

/// An open PDH query with the four memory counters and the process IDs.
struct Query {
    query: Handle,
    counters: [Handle; 5],
}

// SAFETY: PDH query handles may be used from any thread as long as calls are not concurrent;
// the query is owned by one source, which is owned by one sampler thread.
unsafe impl Send for Query {}

/// PDH's status as its name in pdhmsg.h where it is one a missing counter gives.
fn status_name(rc: PdhStatus) -> String {
    match rc {
        0xC000_0BB8 => "PDH_CSTATUS_NO_OBJECT".into(),
        0xC000_0BB9 => "PDH_CSTATUS_NO_COUNTER".into(),
        0xC000_0BC0 => "PDH_CSTATUS_BAD_COUNTERNAME".into(),
        other => format!("PDH status 0x{other:08X}"),
    }
}

impl Query {
    /// The query with the counters, or what is missing.
    fn open() -> Result<Query, String> {
        let mut query: Handle = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; a null data source means the live system.
        let rc = unsafe { PdhOpenQueryW(std::ptr::null(), 0, &mut query) };
        if rc != 0 {
            return Err(format!("PdhOpenQueryW: {}", status_name(rc)));
        }
        let mut q = Query {
            query,
            counters: [std::ptr::null_mut(); 5],
        };
        let paths = [
            pdh::ADAPTER_DEDICATED,
            pdh::ADAPTER_SHARED,
            pdh::PROCESS_DEDICATED,
            pdh::PROCESS_SHARED,
            pdh::PROCESS_ID,
        ];
        for (slot, path) in q.counters.iter_mut().zip(paths) {
            let w = wide(path);
            // SAFETY: `w` is a NUL-terminated UTF-16 string alive for the call; out-pointer to a field.
            let rc = unsafe { PdhAddEnglishCounterW(q.query, w.as_ptr(), 0, slot) };
            if rc != 0 {
                // `q` drops and closes the query.
                return Err(format!("{path}: {}", status_name(rc)));
            }
        }
        Ok(q)
    }

    fn read_array(&self, counter: Handle) -> Vec<(String, u64)> {
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

    fn collect(&self) -> Result<Counters, String> {
        // SAFETY: a live query handle.
        let rc = unsafe { PdhCollectQueryData(self.query) };
        if rc != 0 {
            return Err(format!("PdhCollectQueryData: {}", status_name(rc)));
        }
        Ok(Counters {
            adapter_dedicated: self.read_array(self.counters[0]),
            adapter_shared: self.read_array(self.counters[1]),
            process_dedicated: self.read_array(self.counters[2]),
            process_shared: self.read_array(self.counters[3]),
            process_ids: self.read_array(self.counters[4]),
            processes_missing: false,
        })
    }
}

impl Drop for Query {
    fn drop(&mut self) {
        // SAFETY: closes the query opened in `open`, once.
        unsafe { PdhCloseQuery(self.query) };
    }
}

impl CounterFeed for Query {
    fn read(&mut self) -> Result<Option<(Option<u64>, Counters)>, String> {
        self.collect().map(|c| Some((None, c)))
    }
}

/// NVML (the library at `nvml_lib`, else the system's) with the live counters; `Err` says in one
/// line why the counters cannot be read (Windows before 10 1709 or without a WDDM 2 driver:
/// "GPUs in the Task Manager", DirectX Developer Blog, 2017; Wine, which has none).
pub fn open(nvml_lib: Option<std::path::PathBuf>) -> Result<CountersSource, String> {
    let unavailable = |why: String| pdh::unavailable(&why);
    let query = Query::open().map_err(unavailable)?;
    let c = query.collect().map_err(unavailable)?;
    if pdh::adapters(&c).is_empty() {
        return Err(unavailable(format!(
            "{} lists no GPU adapter",
            pdh::ADAPTER_DEDICATED
        )));
    }
    Ok(CountersSource::new(
        Some(NvmlSource::new(nvml_lib)),
        Box::new(query),
        SourceKind::Windows,
    ))
}
