//! Reading a file the user named (a workload, a log, a recording, a reference table, a library,
//! the presets file): it must be a regular file, checked *before* it is opened, since opening a
//! FIFO blocks until a writer comes and reading `/dev/zero` never ends; and every read is capped,
//! so no file makes the program hold more than the cap says.

use crate::file_error::FileError;
use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// What a path is, in words, for a refusal.
pub fn kind_name(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    if t.is_symlink() {
        return "a symbolic link";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

/// The metadata of `path` (following symbolic links) when it is a regular file; otherwise one
/// line naming the path and what it is. Nothing is opened.
pub fn regular(path: &Path) -> Result<Metadata, FileError> {
    let meta = std::fs::metadata(path).map_err(|e| FileError::io(path, "cannot read", e))?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(not_regular(path, &meta))
    }
}

fn not_regular(path: &Path, meta: &Metadata) -> FileError {
    FileError::refused(path, format!("is {}, not a regular file", kind_name(meta)))
}

/// Opens `path` for reading once [`regular`] has said it is a regular file, and checks the
/// opened file again (the path could have been swapped in between). Returns it with its size.
pub fn open_regular(path: &Path) -> Result<(File, u64), FileError> {
    regular(path)?;
    let f = File::open(path).map_err(|e| FileError::io(path, "cannot open", e))?;
    let meta = f
        .metadata()
        .map_err(|e| FileError::io(path, "cannot read", e))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    Ok((f, meta.len()))
}

/// The whole of a regular file of at most `max` bytes; `what` names the kind of file in the
/// refusal ("a workload file"). One byte past the cap is read, so a file that grows while it is
/// read is refused too, never cut silently.
pub fn read_capped(path: &Path, max: u64, what: &str) -> Result<Vec<u8>, FileError> {
    let (f, len) = open_regular(path)?;
    let too_big = |n: u64| {
        FileError::refused(
            path,
            format!(
                "{n} bytes is too large for {what} (at most {})",
                crate::units::human(max)
            ),
        )
    };
    if len > max {
        return Err(too_big(len));
    }
    let mut buf = Vec::with_capacity(len as usize);
    f.take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| FileError::io(path, "cannot read", e))?;
    if buf.len() as u64 > max {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_text_capped(path: &Path, max: u64, what: &str) -> Result<String, FileError> {
    String::from_utf8(read_capped(path, max, what)?)
        .map_err(|e| FileError::refused(path, format!("not UTF-8 text: {e}")))
}

/// Text from a file or a pipe in whatever encoding a log is commonly saved in: UTF-8 (with or
/// without a byte-order mark), or UTF-16 with a byte-order mark, which is what Windows
/// PowerShell 5.1's `>` and `Out-File` write (their default encoding is "Unicode", UTF-16LE with
/// a BOM). Bytes that are not valid in the encoding become U+FFFD.
pub fn decode_text(bytes: &[u8]) -> String {
    let utf16 = |b: &[u8], unit: fn([u8; 2]) -> u16| {
        let units: Vec<u16> = b.chunks_exact(2).map(|c| unit([c[0], c[1]])).collect();
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    };
    match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, u16::from_le_bytes),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, u16::from_be_bytes),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_opened_and_reads_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        // Each refusal is the path's fault (exit 2), with one line naming what is wrong.
        let refused = |e: FileError| {
            assert!(e.is_refusal(), "{e:?}");
            e.to_string()
        };
        let e = refused(read_capped(dir.path(), 10, "a test file").unwrap_err());
        assert!(e.contains("is a directory"), "{e}");
        let p = dir.path().join("f");
        std::fs::write(&p, "0123456789ab").unwrap();
        let e = refused(read_capped(&p, 10, "a test file").unwrap_err());
        assert!(e.contains("12 bytes is too large for a test file"), "{e}");
        assert_eq!(read_text_capped(&p, 12, "x").unwrap(), "0123456789ab");
        let e = refused(read_capped(&dir.path().join("none"), 10, "x").unwrap_err());
        assert!(e.contains("none: cannot read: "), "{e}");
        #[cfg(unix)]
        {
            let e = refused(read_capped(Path::new("/dev/zero"), 10, "x").unwrap_err());
            assert!(e.contains("character device"), "{e}");
            // A file inside a file: the system answers "not a directory", not a missing path.
            let e = read_capped(&p.join("g"), 10, "x").unwrap_err();
            assert!(!e.is_refusal(), "{e:?}");
        }
    }

    #[test]
    fn utf16_logs_with_a_byte_order_mark_are_decoded() {
        let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB — ü";
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(msg.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(msg.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode_text(&le), msg);
        assert_eq!(decode_text(&be), msg);
        assert_eq!(decode_text(&[0xEF, 0xBB, 0xBF, b'a']), "a");
        assert_eq!(decode_text(b"a\xffb"), "a\u{fffd}b");
    }
}
