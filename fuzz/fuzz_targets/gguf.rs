//! Any bytes must give Ok or a one-line error naming the input: never a panic, a hang or a
//! huge allocation (libFuzzer's -rss_limit_mb and -timeout catch the last two).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = vram_doctor::import::from_bytes::gguf(data) {
        let e = e.to_string();
        assert!(!e.contains('\n'), "multi-line error: {e}");
    }
});
